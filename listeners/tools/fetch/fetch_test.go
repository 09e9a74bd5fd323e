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
)

func TestPublic(t *testing.T) {
	for addr, want := range map[string]bool{
		"93.184.216.34": true, "2606:2800:220:1:248:1893:25c8:1946": true,
		"127.0.0.1": false, "10.1.2.3": false, "172.16.0.1": false, "192.168.1.1": false, "169.254.169.254": false,
		"169.254.1.1": false, "100.64.0.1": false, "0.0.0.0": false, "0.1.2.3": false, "::1": false, "::": false,
		"fe80::1": false, "fc00::1": false, "fd00:ec2::254": false, "::ffff:127.0.0.1": false, "::ffff:10.0.0.1": false,
		"224.0.0.1": false, "255.255.255.255": false,
	} {
		if got := Public(netip.MustParseAddr(addr)); got != want {
			t.Errorf("Public(%s) = %v, want %v", addr, got, want)
		}
	}
}

func TestFetch(t *testing.T) {
	private := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("internal secret"))
	}))
	defer private.Close()
	privPort := private.Listener.Addr().(*net.TCPAddr).Port
	var public *httptest.Server
	public = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
