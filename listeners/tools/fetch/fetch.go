// Package fetch is the fetch tool: http and https only, to public addresses
// only — no IANA special-purpose range (IPv4 and IPv6, IPv4 wrapped in
// NAT64 or 6to4 judged as IPv4) and none of the host's own addresses. The
// address check runs on the IP actually dialed (a net.Dialer Control
// function), so it holds after DNS resolution, against DNS rebinding, and
// on every redirect; redirects are counted and re-checked against
// allowed_domains too. Size and time are capped. Every connection's
// host:port is also checked against the network: allow-list of the
// thread's security profile (xmlpipe.CheckDial), redirects included.
package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/tools"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// Name is the tool's name in tools: and tool_config:.
const Name = "fetch"

// Defaults.
const (
	DefaultTimeout      = 30 * time.Second
	DefaultMaxBytes     = 256 << 10
	DefaultMaxRedirects = 5
)

// Refusals.
var (
	ErrScheme    = errors.New("fetch: only http and https URLs are allowed")
	ErrNoHost    = errors.New("fetch: URL must have a host")
	ErrAddress   = errors.New("fetch: access to internal, private or metadata addresses is not allowed")
	ErrDomain    = errors.New("fetch: host not in allowed_domains")
	ErrRedirects = errors.New("fetch: too many redirects")
	ErrMethod    = errors.New("fetch: method not allowed")
)

// Resolver looks a host name up (net.DefaultResolver.LookupNetIP by default).
type Resolver func(ctx context.Context, host string) ([]netip.Addr, error)

// Tool is the fetch listener.
type Tool struct {
	// Policy gives allowed_domains and limits for a caller.
	Policy tools.Policy
	// Callers lets an answer reach a caller that takes another payload
	// (an agent takes text); nil: answer in the result type.
	Callers tools.Callers
	// Resolve replaces DNS (tests).
	Resolve Resolver
	// Exempt, when set, lets a dialed address through the public-address
	// check (tests serve on loopback; an embedding program may allow one
	// internal service). nil: no exemption.
	Exempt func(netip.AddrPort) bool
}

// Handle fetches the URL and answers the caller.
func (t *Tool) Handle(ctx context.Context, p *Fetch, md xmlpipe.Metadata) (xmlpipe.Response, error) {
	var c tools.Config
	if t.Policy != nil {
		c = t.Policy.Config(md.From, Name)
	}
	res := &FetchResult{URL: p.URL}
	if err := t.fetch(ctx, c, p, res); err != nil {
		res.Error = err.Error()
	}
	return tools.Answer(t.Callers, md, res), nil
}

// checkURL applies the scheme and domain rules to one URL (the first and
// every redirect).
func checkURL(u *url.URL, domains []string) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%w (got %q)", ErrScheme, u.Scheme)
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if host == "" {
		return ErrNoHost
	}
	if len(domains) == 0 {
		return nil
	}
	for _, d := range domains {
		d = strings.ToLower(strings.TrimPrefix(strings.TrimSpace(d), "."))
		if host == d || strings.HasSuffix(host, "."+d) {
			return nil
		}
	}
	return fmt.Errorf("%w: %s", ErrDomain, host)
}

// client builds the per-call client: no proxy (a proxy would be the dialed
// address), every dial checked, redirects counted and checked.
func (t *Tool) client(c tools.Config, timeout time.Duration) *http.Client {
	resolve := t.Resolve
	if resolve == nil {
		resolve = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	dialer := &net.Dialer{Timeout: timeout, Control: func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("%w: %s", ErrAddress, address)
		}
		if (!Public(ap.Addr()) || isLocal(ap.Addr())) && (t.Exempt == nil || !t.Exempt(ap)) {
			return ErrAddress
		}
		return nil
	}}
	transport := &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if err := xmlpipe.CheckDial(ctx, addr); err != nil { // the thread's profile, by the name asked for
				return nil, err
			}
			host, port, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			ips, err := resolve(ctx, host)
			if ip, perr := netip.ParseAddr(host); perr == nil {
				ips, err = []netip.Addr{ip}, nil
			}
			if err != nil {
				return nil, fmt.Errorf("fetch: resolve %s: %w", host, err)
			}
			var last error = ErrAddress
			for _, ip := range ips {
				conn, err := dialer.DialContext(ctx, network, net.JoinHostPort(ip.Unmap().String(), port))
				if err == nil {
					return conn, nil
				}
				last = err
			}
			return nil, last
		},
		TLSHandshakeTimeout:   timeout,
		ResponseHeaderTimeout: timeout,
		MaxIdleConns:          1,
		DisableKeepAlives:     true,
	}
	maxRedirects := tools.Or(c.MaxRedirects, DefaultMaxRedirects)
	return &http.Client{
		Transport: transport,
		Timeout:   timeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > maxRedirects {
				return fmt.Errorf("%w (max: %d)", ErrRedirects, maxRedirects)
			}
			return checkURL(req.URL, c.AllowedDomains)
		},
	}
}

var methods = map[string]bool{"GET": true, "HEAD": true, "POST": true, "PUT": true, "DELETE": true, "PATCH": true, "OPTIONS": true}

func (t *Tool) fetch(ctx context.Context, c tools.Config, p *Fetch, res *FetchResult) error {
	u, err := url.Parse(strings.TrimSpace(p.URL))
	if err != nil {
		return fmt.Errorf("fetch: bad URL: %w", err)
	}
	if err := checkURL(u, c.AllowedDomains); err != nil {
		return err
	}
	method := strings.ToUpper(tools.Or(p.Method, "GET"))
	if !methods[method] {
		return fmt.Errorf("%w: %s", ErrMethod, method)
	}
	timeout := tools.Or(c.Timeout, DefaultTimeout)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var body io.Reader
	if p.Body != "" {
		body = strings.NewReader(p.Body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return fmt.Errorf("fetch: %w", err)
	}
	req.Header.Set("User-Agent", "xmlpipe-fetch/1")
	client := t.client(c, timeout)
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		return unwrap(err)
	}
	defer resp.Body.Close()
	maxBytes := tools.Or(c.MaxBytes, DefaultMaxBytes)
	b, err := io.ReadAll(io.LimitReader(resp.Body, int64(maxBytes)+1))
	if err != nil {
		return fmt.Errorf("fetch: reading the body: %w", unwrap(err))
	}
	if len(b) > maxBytes {
		b, res.Truncated = b[:maxBytes], true
	}
	final := resp.Request.URL.String()
	if n := tools.CarriedSize(final); n > maxURL {
		return fmt.Errorf("fetch: the final URL (after redirects) is %d bytes as the answer carries it (max: %d)", n, maxURL)
	}
	res.URL, res.Status = final, resp.StatusCode
	res.ContentType, _ = tools.CutCarried(tools.Text([]byte(resp.Header.Get("Content-Type"))), maxContentType)
	// The body, escaped as the answer carries it, must leave the answer
	// under the message size cap: a server's body of < or & is cut too.
	var cut bool
	if res.Body, cut = tools.CutCarried(tools.Text(b), MaxCarried-tools.CarriedSize(res.URL)); cut {
		res.Truncated = true
	}
	return nil
}

// MaxCarried bounds the final URL and the body of an answer together,
// counted as the answer carries them (tools.CarriedSize: escaped): it
// keeps the answer under the pump's default message size cap.
const MaxCarried = stage.DefaultMaxBytes - 64<<10

// maxContentType bounds the Content-Type carried (a server chooses it).
const maxContentType = 1 << 10

// maxURL bounds the final URL carried (a redirecting server chooses it).
const maxURL = 16 << 10

// unwrap turns a client error into the refusal inside it, when there is one.
func unwrap(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		for _, e := range []error{ErrDomain, ErrRedirects, ErrScheme, ErrNoHost} {
			if errors.Is(ue.Err, e) {
				return ue.Err
			}
		}
	}
	if errors.Is(err, ErrAddress) {
		return ErrAddress
	}
	var ne *net.OpError
	if errors.As(err, &ne) && errors.Is(ne.Err, xmlpipe.ErrNetworkDenied) {
		return fmt.Errorf("fetch: %w", ne.Err)
	}
	if errors.Is(err, xmlpipe.ErrNetworkDenied) {
		return fmt.Errorf("fetch: %w", errors.Unwrap(err))
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return errors.New("fetch: timed out")
	}
	return fmt.Errorf("fetch: %w", err)
}
