package fetch

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/tools"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// allowList is a security profile whose network: allow-list is a set of
// host:port entries.
type allowList map[string]bool

func (a allowList) Name() string             { return "test" }
func (a allowList) Reaches(string) bool      { return true }
func (a allowList) MayDial(addr string) bool { return a[addr] }

// TestFetchProfileNetwork: the thread's profile decides which host:port a
// fetch may connect to — the first request and every redirect — and a
// refusal is the fetch's answer, naming the address and the profile.
func TestFetchProfileNetwork(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/hello":
			_, _ = w.Write([]byte("hello"))
		case "/away":
			http.Redirect(w, r, "http://other.test:"+r.Host[strings.LastIndex(r.Host, ":")+1:]+"/hello", http.StatusFound)
		}
	}))
	defer srv.Close()
	port := itoa(srv.Listener.Addr().(*net.TCPAddr).Port)
	tool := &Tool{
		Policy: tools.Fixed(tools.Config{Timeout: 5 * time.Second}),
		Resolve: func(context.Context, string) ([]netip.Addr, error) {
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		},
		Exempt: func(netip.AddrPort) bool { return true },
	}
	profile := allowList{"public.test:" + port: true}
	call := func(p xmlpipe.Profile, url string) *FetchResult {
		t.Helper()
		ctx := xmlpipe.WithProfile(context.Background(), p)
		resp, err := tool.Handle(ctx, &Fetch{URL: url}, xmlpipe.Metadata{From: "agent", Profile: p})
		if err != nil {
			t.Fatal(err)
		}
		return resp.(*xmlpipe.RespondResponse).Payload.(*FetchResult)
	}
	if r := call(profile, "http://public.test:"+port+"/hello"); r.Error != "" || r.Body != "hello" {
		t.Fatalf("allowed address: %+v", r)
	}
	for _, c := range []struct{ name, url string }{
		{"address not in the profile", "http://other.test:" + port + "/hello"},
		{"same host, another port", "http://public.test:1/hello"},
		{"redirect out of the profile", "http://public.test:" + port + "/away"},
	} {
		r := call(profile, c.url)
		if !strings.Contains(r.Error, xmlpipe.ErrNetworkDenied.Error()) || !strings.Contains(r.Error, "profile test") || r.Body != "" {
			t.Errorf("%s: %+v, want a refusal by the profile", c.name, r)
		}
	}
	if r := call(nil, "http://other.test:"+port+"/hello"); r.Error != "" {
		t.Errorf("without a profile: %+v", r)
	}
	if err := xmlpipe.CheckDial(xmlpipe.WithProfile(context.Background(), profile), "x:1"); !errors.Is(err, xmlpipe.ErrNetworkDenied) {
		t.Errorf("CheckDial: %v", err)
	}
}
