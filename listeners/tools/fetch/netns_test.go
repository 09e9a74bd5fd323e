package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xml-pipeline/xmlpipe/listeners/tools"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// netnsRole tells a re-executed test binary it is the client inside the
// test's network namespace.
const netnsRole = "XMLPIPE_FETCH_NETNS"

// netnsPort is what the server inside the namespace listens on.
const netnsPort = "8080"

// netnsLink is one address pair on the veth link between the client's
// namespace (client) and the server's (server), with the prefix length.
type netnsLink struct {
	client, server string
	bits           int
}

// netnsPublic is the "public" server: any address outside every special
// range will do inside namespaces of our own.
var netnsPublic = netnsLink{"93.184.216.33", "93.184.216.34", 24}

// netnsSpecial are the special-purpose addresses the server answers on.
var netnsSpecial = []netnsLink{
	{"192.0.2.1", "192.0.2.2", 24},               // documentation (this machine's own range, too)
	{"198.51.100.1", "198.51.100.2", 24},         // documentation
	{"203.0.113.1", "203.0.113.2", 24},           // documentation
	{"198.18.0.1", "198.18.0.2", 15},             // benchmarking
	{"198.19.255.1", "198.19.255.2", 24},         // benchmarking, its upper half
	{"240.0.0.1", "240.0.0.2", 4},                // reserved
	{"100.64.0.1", "100.64.0.2", 10},             // carrier-grade NAT
	{"192.0.0.1", "192.0.0.2", 24},               // IETF protocol assignments
	{"192.88.99.1", "192.88.99.2", 24},           // 6to4 relay anycast
	{"2001:db8::1", "2001:db8::2", 64},           // documentation
	{"64:ff9b::7f00:2", "64:ff9b::7f00:1", 96},   // NAT64 around 127.0.0.1
	{"2002:c000:202::1", "2002:c000:202::2", 48}, // 6to4 around 192.0.2.2
	{"2001::1", "2001::2", 32},                   // Teredo
	{"fc00::1", "fc00::2", 64},                   // unique local
	{"fec0::1", "fec0::2", 64},                   // site-local
	{"3fff::1", "3fff::2", 20},                   // documentation (RFC 9637)
	{"2001:20::1", "2001:20::2", 28},             // ORCHIDv2
}

// TestFetchSpecialRangesInNetns serves HTTP on special-purpose addresses
// for real — in two network namespaces the test creates, joined by a veth
// pair, so nothing on the host changes — and fetches them from the other
// namespace: directly, through a redirect from a public address, and via
// a name resolving to them. Each address is first shown reachable with a
// plain dial, so the refusals are fetch's doing. It needs root and ip(8);
// CI runs as root on Debian with iproute2 (Makefile TEST_APT_PACKAGES).
func TestFetchSpecialRangesInNetns(t *testing.T) {
	if os.Getenv(netnsRole) == "client" {
		netnsClient(t)
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("skipped: creating network namespaces needs root (CI runs the tests as root)")
	}
	ipTool, err := exec.LookPath("ip")
	if err != nil {
		t.Skip("skipped: ip(8) not found (install iproute2: make test-deps)")
	}
	ip := func(args ...string) error {
		out, err := exec.Command(ipTool, args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	nsA, nsB := fmt.Sprintf("xmlpipe-fetch-%d-a", os.Getpid()), fmt.Sprintf("xmlpipe-fetch-%d-b", os.Getpid())
	if err := ip("netns", "add", nsA); err != nil {
		t.Skipf("skipped: cannot create a network namespace here: %v", err)
	}
	t.Cleanup(func() { _ = ip("netns", "del", nsA) })
	if err := ip("netns", "add", nsB); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ip("netns", "del", nsB) })
	steps := [][]string{
		{"-n", nsA, "link", "add", "va", "type", "veth", "peer", "name", "vb", "netns", nsB},
		{"-n", nsA, "link", "set", "lo", "up"},
		{"-n", nsB, "link", "set", "lo", "up"},
	}
	for _, l := range append([]netnsLink{netnsPublic}, netnsSpecial...) {
		for _, side := range []struct{ ns, dev, addr string }{{nsA, "va", l.client}, {nsB, "vb", l.server}} {
			step := []string{"-n", side.ns, "addr", "add", fmt.Sprintf("%s/%d", side.addr, l.bits), "dev", side.dev}
			if strings.Contains(side.addr, ":") {
				step = append(step, "nodad")
			}
			steps = append(steps, step)
		}
	}
	steps = append(steps, []string{"-n", nsA, "link", "set", "va", "up"}, []string{"-n", nsB, "link", "set", "vb", "up"})
	for _, s := range steps {
		if err := ip(s...); err != nil {
			t.Fatal(err)
		}
	}

	l := listenInNetns(t, nsB, "tcp", "[::]:"+netnsPort)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/hello":
			_, _ = io.WriteString(w, "hello from the public side")
		case "/redirect":
			http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
		default:
			_, _ = io.WriteString(w, "SECRET-INSIDE "+r.Host)
		}
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })

	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, ipTool, "netns", "exec", nsA, os.Args[0],
		"-test.run=^TestFetchSpecialRangesInNetns$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), netnsRole+"=client")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the client in namespace %s failed: %v\n%s", nsA, err, out)
	}
	if !strings.Contains(string(out), "--- PASS: TestFetchSpecialRangesInNetns") {
		t.Fatalf("the client did not run:\n%s", out)
	}
	t.Logf("client:\n%s", out)
}

// listenInNetns listens inside the named network namespace: on an OS thread
// moved into it and never given back (the thread ends with its goroutine),
// so the socket belongs to that namespace while the rest of the process
// stays where it was.
func listenInNetns(t *testing.T, ns, network, addr string) net.Listener {
	t.Helper()
	type result struct {
		l   net.Listener
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: this thread must not run anything else
		f, err := os.Open("/var/run/netns/" + ns)
		if err != nil {
			ch <- result{err: err}
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			ch <- result{err: fmt.Errorf("setns %s: %w", ns, err)}
			return
		}
		l, err := net.Listen(network, addr)
		ch <- result{l, err}
	}()
	r := <-ch
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.l
}

// netnsClient runs inside the client's namespace.
func netnsClient(t *testing.T) {
	ctx := context.Background()
	tool := &Tool{
		Policy: tools.Fixed(tools.Config{Timeout: 5 * time.Second}),
		Resolve: func(_ context.Context, host string) ([]netip.Addr, error) {
			if ip, ok := strings.CutSuffix(host, ".special.test"); ok {
				return []netip.Addr{netip.MustParseAddr(strings.ReplaceAll(ip, "-", ":"))}, nil
			}
			return nil, errors.New("no such host")
		},
	}
	fetch := func(url string) *FetchResult {
		t.Helper()
		resp, err := tool.Handle(ctx, &Fetch{URL: url}, xmlpipe.Metadata{From: "agent"})
		if err != nil {
			t.Fatal(err)
		}
		return resp.(*xmlpipe.RespondResponse).Payload.(*FetchResult)
	}
	hostPort := func(addr, port string) string { return net.JoinHostPort(addr, port) }
	public := "http://" + hostPort(netnsPublic.server, netnsPort)

	// The public side works: the setup routes and serves.
	if r := fetch(public + "/hello"); r.Error != "" || r.Body != "hello from the public side" {
		t.Fatalf("public fetch: %+v", r)
	}
	for _, l := range netnsSpecial {
		target := hostPort(l.server, netnsPort)
		t.Run(l.server, func(t *testing.T) {
			c, err := net.DialTimeout("tcp", target, 5*time.Second)
			if err != nil {
				t.Fatalf("%s is not reachable, so a refusal would prove nothing: %v", target, err)
			}
			_ = c.Close()
			name := strings.ReplaceAll(l.server, ":", "-") + ".special.test"
			for _, url := range []string{
				"http://" + target + "/",
				public + "/redirect?to=http://" + target + "/",
				"http://" + hostPort(name, netnsPort) + "/",
				public + "/redirect?to=http://" + hostPort(name, netnsPort) + "/",
			} {
				r := fetch(url)
				if r.Error != ErrAddress.Error() || strings.Contains(r.Body, "SECRET") {
					t.Errorf("%s: %+v, want %q", url, r, ErrAddress)
				}
			}
		})
	}
	// This namespace's own addresses are refused too: a service listening
	// here on all interfaces, reached through the host's "public" address.
	own, err := net.Listen("tcp", "0.0.0.0:8081")
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	go func() {
		_ = http.Serve(own, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "SECRET-LOCAL") }))
	}()
	target := hostPort(netnsPublic.client, "8081")
	c, err := net.DialTimeout("tcp", target, 5*time.Second)
	if err != nil {
		t.Fatalf("own address not reachable: %v", err)
	}
	_ = c.Close()
	for _, url := range []string{"http://" + target + "/", public + "/redirect?to=http://" + target + "/"} {
		if r := fetch(url); r.Error != ErrAddress.Error() || strings.Contains(r.Body, "SECRET") {
			t.Errorf("own address %s: %+v", url, r)
		}
	}
}
