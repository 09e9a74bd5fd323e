package fetch

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/tools"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// TestPublic is table-driven over every special-purpose range: its first
// and last addresses are refused, named cases from issue 30 too, and the
// addresses just outside are public.
func TestPublic(t *testing.T) {
	for addr, want := range map[string]string{
		// Public.
		"93.184.216.34": "", "8.8.8.8": "", "1.1.1.1": "", "2606:2800:220:1:248:1893:25c8:1946": "", "2606:4700::1111": "",
		"::ffff:8.8.8.8": "", "64:ff9b::808:808": "", "2002:808:808::1": "", "2002:808:808:1::2": "",
		"192.0.1.1": "", "192.0.3.0": "", "198.17.255.255": "", "198.20.0.0": "", "100.63.255.255": "", "100.128.0.0": "",
		"223.255.255.255": "", "198.51.99.255": "", "203.0.114.0": "", "192.88.98.255": "", "2001:200::1": "",
		"2001:db9::1": "", "3fff:1000::1": "", "2620:4f:8001::1": "",
		// Issue 30's list.
		"192.0.2.1": "documentation, TEST-NET-1", "198.51.100.7": "TEST-NET-2", "203.0.113.9": "TEST-NET-3",
		"2001:db8::1": "documentation (RFC 3849)", "198.18.0.1": "benchmarking", "198.19.255.254": "benchmarking",
		"240.0.0.1": "reserved", "255.255.255.255": "broadcast", "0.0.0.0": "this network", "0.1.2.3": "this network",
		"100.64.0.1": "carrier-grade NAT", "192.0.0.9": "IETF protocol assignments", "192.88.99.1": "6to4 relay",
		"224.0.0.1": "multicast", "239.255.255.250": "multicast", "ff02::1": "multicast",
		"64:ff9b::7f00:1": "NAT64 of loopback", "64:ff9b::a00:1": "NAT64 of private", "64:ff9b::c000:201": "NAT64 of documentation",
		"64:ff9b:1::808:808": "local-use", "2002:7f00:1::1": "6to4 of loopback", "2002:a9fe:a9fe::": "6to4 of link-local",
		"2002:c000:201::1": "6to4 of documentation", "2001::1": "Teredo", "2001:0:4136:e378:8000:63bf:3fff:fdd2": "Teredo",
		"::ffff:127.0.0.1": "loopback", "::ffff:10.0.0.1": "private", "::7f00:1": "IPv4-compatible", "::ffff:0:a00:1": "IPv4-translated",
		"fc00::1": "unique local", "fd00:ec2::254": "unique local", "fe80::1": "link-local", "fec0::1": "site-local",
		"100::1": "discard-only", "2001:10::1": "ORCHID", "2001:20::1": "ORCHID", "2001:2::1": "benchmarking",
		"3fff::1": "documentation (RFC 9637)", "5f00::1": "segment routing", "::1": "loopback", "::": "unspecified",
		"127.0.0.1": "loopback", "10.1.2.3": "private", "172.16.0.1": "private", "192.168.1.1": "private",
		"169.254.169.254": "cloud metadata", "100.100.100.200": "carrier-grade NAT", "fe80::1%eth0": "zoned",
		"4000::1": "unallocated", "192.31.196.1": "AS112", "192.52.193.1": "AMT", "192.175.48.1": "AS112",
		"2620:4f:8000::1": "AS112",
	} {
		got := Special(netip.MustParseAddr(addr))
		if (got == "") != (want == "") || !strings.Contains(got, want) {
			t.Errorf("Special(%s) = %q, want %q", addr, got, want)
		}
		if Public(netip.MustParseAddr(addr)) != (want == "") {
			t.Errorf("Public(%s) = %v", addr, !Public(netip.MustParseAddr(addr)))
		}
	}
	// Every range of both registries, at both ends.
	for _, b := range append(append([]block(nil), special4...), special6...) {
		first, last := b.prefix.Masked().Addr(), lastAddr(b.prefix)
		for _, ip := range []netip.Addr{first, last} {
			if Public(ip) || (ip.Is6() && Public(netip.AddrFrom16(ip.As16()))) {
				t.Errorf("%s (%s, %s) is public", ip, b.prefix, b.name)
			}
		}
	}
	if Public(netip.Addr{}) {
		t.Error("the zero Addr is public")
	}
}

// lastAddr is the highest address of p.
func lastAddr(p netip.Prefix) netip.Addr {
	a := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(a)*8; i++ {
		a[i/8] |= 0x80 >> (i % 8)
	}
	ip, _ := netip.AddrFromSlice(a)
	return ip
}

// TestHostAddressesRefused: the host's own interface addresses are never
// dialed, public or not.
func TestHostAddressesRefused(t *testing.T) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Skip(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			ip, _ := netip.AddrFromSlice(n.IP)
			if !isLocal(ip) {
				t.Errorf("%s is this host's, isLocal says no", ip)
			}
		}
	}
	if isLocal(netip.MustParseAddr("93.184.216.34")) {
		t.Error("a remote address counted as local")
	}
}

func TestFetch(t *testing.T) {
	private := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("internal secret"))
	}))
	defer private.Close()
	privPort := private.Listener.Addr().(*net.TCPAddr).Port
	public := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/hello":
			w.Header().Set("Content-Type", "text/plain")
			_, _ = w.Write([]byte("hello " + r.Method))
		case "/to-private":
			http.Redirect(w, r, private.URL+"/", http.StatusFound)
		case "/to-rebind":
			http.Redirect(w, r, "http://rebind.test:"+itoa(privPort)+"/", http.StatusFound)
		case "/to-metadata":
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
		case "/to-other-domain":
			http.Redirect(w, r, "http://other.test:"+r.Host[strings.LastIndex(r.Host, ":")+1:]+"/hello", http.StatusFound)
		case "/to-file":
			http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		case "/hop":
			http.Redirect(w, r, "/hello", http.StatusFound)
		case "/big":
			_, _ = w.Write([]byte(strings.Repeat("x", 1000)))
		case "/slow":
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
		}
	}))
	defer public.Close()
	pubAddr := public.Listener.Addr().(*net.TCPAddr)
	pubPort := itoa(pubAddr.Port)
	tool := &Tool{
		Resolve: func(_ context.Context, host string) ([]netip.Addr, error) {
			switch host {
			case "public.test", "other.test", "rebind.test":
				return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
			case "mixed.test":
				return []netip.Addr{netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("127.0.0.1")}, nil
			}
			return nil, errors.New("no such host")
		},
		// Only the "public" test server's port counts as a public address.
		Exempt: func(ap netip.AddrPort) bool { return ap.Port() == uint16(pubAddr.Port) },
	}
	call := func(c tools.Config, p Fetch) *FetchResult {
		t.Helper()
		tool.Policy = tools.Fixed(c)
		resp, err := tool.Handle(context.Background(), &p, xmlpipe.Metadata{From: "agent"})
		if err != nil {
			t.Fatal(err)
		}
		return resp.(*xmlpipe.RespondResponse).Payload.(*FetchResult)
	}
	c := tools.Config{Timeout: 2 * time.Second}
	base := "http://public.test:" + pubPort

	if r := call(c, Fetch{URL: base + "/hello"}); r.Error != "" || r.Status != 200 || r.Body != "hello GET" ||
		r.ContentType != "text/plain" {
		t.Fatalf("hello: %+v", r)
	}
	if r := call(c, Fetch{URL: base + "/hello", Method: "post", Body: "x"}); r.Error != "" || r.Body != "hello POST" {
		t.Fatalf("post: %+v", r)
	}
	if r := call(c, Fetch{URL: base + "/hop"}); r.Error != "" || r.URL != base+"/hello" {
		t.Fatalf("redirect within the server: %+v", r)
	}
	if r := call(tools.Config{MaxBytes: 100}, Fetch{URL: base + "/big"}); r.Error != "" || !r.Truncated || len(r.Body) != 100 {
		t.Fatalf("size cap: %+v", r)
	}
	if r := call(tools.Config{AllowedDomains: []string{"public.test"}}, Fetch{URL: base + "/hello"}); r.Error != "" {
		t.Fatalf("allowed domain: %+v", r)
	}

	refusals := []struct {
		name string
		c    tools.Config
		url  string
		want error
	}{
		{"loopback literal", c, private.URL + "/", ErrAddress},
		{"DNS rebinding to 127.0.0.1", c, "http://rebind.test:" + itoa(privPort) + "/", ErrAddress},
		{"some address private", c, "http://mixed.test:" + itoa(privPort) + "/", ErrAddress},
		{"metadata", c, "http://169.254.169.254/latest/meta-data/", ErrAddress},
		{"private literal", c, "http://10.0.0.1/", ErrAddress},
		{"ipv6 loopback", c, "http://[::1]:" + itoa(privPort) + "/", ErrAddress},
		{"redirect to a private address", c, base + "/to-private", ErrAddress},
		{"redirect rebinding", c, base + "/to-rebind", ErrAddress},
		{"redirect to metadata", c, base + "/to-metadata", ErrAddress},
		{"redirect to another domain", tools.Config{AllowedDomains: []string{"public.test"}}, base + "/to-other-domain", ErrDomain},
		{"redirect to file", c, base + "/to-file", ErrScheme},
		{"redirect loop", tools.Config{MaxRedirects: 3}, base + "/loop", ErrRedirects},
		{"domain not allowed", tools.Config{AllowedDomains: []string{"example.org"}}, base + "/hello", ErrDomain},
		{"suffix is not a subdomain", tools.Config{AllowedDomains: []string{"test"}}, "http://evilpublic.test.attacker/", nil},
		{"file scheme", c, "file:///etc/passwd", ErrScheme},
		{"no host", c, "http:///x", ErrNoHost},
	}
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			r := call(tc.c, Fetch{URL: tc.url})
			if tc.want == nil {
				if r.Error == "" {
					t.Fatalf("no error: %+v", r)
				}
				return
			}
			if r.Error != tc.want.Error() && !strings.HasPrefix(r.Error, tc.want.Error()) {
				t.Fatalf("error %q, want %q", r.Error, tc.want)
			}
			if strings.Contains(r.Body, "secret") {
				t.Fatal("reached the private server")
			}
		})
	}
	if r := call(tools.Config{Timeout: 200 * time.Millisecond}, Fetch{URL: base + "/slow"}); r.Error != "fetch: timed out" {
		t.Fatalf("timeout: %+v", r)
	}
	if r := call(c, Fetch{URL: base + "/hello", Method: "TRACE"}); !strings.HasPrefix(r.Error, ErrMethod.Error()) {
		t.Fatalf("method: %+v", r)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestFetchAnswerFitsTheSizeCap: whatever a server answers within max_bytes
// — a body of characters XML and JSON escape, a huge Content-Type, a
// redirect to a huge URL — the answer encodes under the pump's default
// message size cap (a cut body is marked Truncated, a URL too long to carry
// is an error), to a console and to an agent (which gets JSON as text).
func TestFetchAnswerFitsTheSizeCap(t *testing.T) {
	type agentInput struct{ Text string }
	agentType, err := xmlpipe.PayloadTypeOf[agentInput]()
	if err != nil {
		t.Fatal(err)
	}
	resultType, err := xmlpipe.PayloadTypeOf[FetchResult]()
	if err != nil {
		t.Fatal(err)
	}
	longPath := "/" + strings.Repeat("a", 64<<10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/brackets":
			_, _ = w.Write([]byte(strings.Repeat("<&>", DefaultMaxBytes/3)))
		case "/plain":
			_, _ = w.Write([]byte(strings.Repeat("a", DefaultMaxBytes)))
		case "/content-type":
			w.Header().Set("Content-Type", "text/plain; x="+strings.Repeat("&", 200<<10))
			_, _ = w.Write([]byte(strings.Repeat("a", DefaultMaxBytes)))
		case "/to-long":
			http.Redirect(w, r, longPath, http.StatusFound)
		default:
			_, _ = w.Write([]byte("ok"))
		}
	}))
	defer srv.Close()
	addr := srv.Listener.Addr().(*net.TCPAddr)
	tool := &Tool{
		Resolve: func(context.Context, string) ([]netip.Addr, error) {
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		},
		Exempt: func(ap netip.AddrPort) bool { return ap.Port() == uint16(addr.Port) },
		Policy: tools.Fixed(tools.Config{Timeout: time.Minute}),
		Callers: tools.CallersFunc(func(name string) (*xmlpipe.PayloadType, bool) {
			return agentType, name == "agent"
		}),
	}
	base := "http://public.test:" + itoa(addr.Port)
	for _, tc := range []struct {
		path          string
		wantTruncated bool
		wantErr       string
	}{
		{path: "/plain"},
		{path: "/brackets", wantTruncated: true},
		{path: "/content-type"},
		{path: "/to-long", wantErr: "fetch: the final URL (after redirects) is"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			for _, from := range []string{"console", "agent"} {
				resp, err := tool.Handle(context.Background(), &Fetch{URL: base + tc.path}, xmlpipe.Metadata{From: from})
				if err != nil {
					t.Fatal(err)
				}
				payload := resp.(*xmlpipe.RespondResponse).Payload
				pt := resultType
				if from == "agent" {
					pt = agentType
				}
				b, err := pt.AppendPayload(nil, payload)
				if err != nil {
					t.Fatal(err)
				}
				if len(b) >= stage.DefaultMaxBytes {
					t.Errorf("%s: the answer is %d bytes, over the %d-byte message cap", from, len(b), stage.DefaultMaxBytes)
				}
				if from != "console" {
					continue
				}
				r := payload.(*FetchResult)
				if !strings.HasPrefix(r.Error, tc.wantErr) || (tc.wantErr != "") != (r.Error != "") {
					t.Errorf("error %q, want %q", r.Error, tc.wantErr)
				}
				if tc.wantErr == "" && (r.Truncated != tc.wantTruncated || r.Body == "") {
					t.Errorf("truncated %v with %d bytes of body, want truncated %v", r.Truncated, len(r.Body), tc.wantTruncated)
				}
			}
		})
	}
}
