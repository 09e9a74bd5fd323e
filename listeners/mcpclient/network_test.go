package mcpclient

import (
	"context"
	"errors"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// allowList is a profile as a handler sees one: its network list holds
// exact addresses and "*:*" (any); nil allows everything.
type allowList struct {
	name  string
	addrs []string
}

func (p allowList) Name() string             { return p.name }
func (p allowList) Reaches(name string) bool { return true }
func (p allowList) MayDial(hostport string) bool {
	return p.addrs == nil || slices.Contains(p.addrs, hostport) || slices.Contains(p.addrs, anyAddress)
}

// callAs runs the tool's handler for payload on a thread whose profile is p
// (nil: none), as the pump does (xmlpipe.WithProfile).
func callAs(t *testing.T, tool Tool, p xmlpipe.Profile, payload string) *ToolResult {
	t.Helper()
	v, err := tool.Payload.Decode([]byte(payload))
	if err != nil {
		t.Fatalf("decode %s: %v", payload, err)
	}
	ctx := context.Background()
	if p != nil {
		ctx = xmlpipe.WithProfile(ctx, p)
	}
	resp, err := tool.Handler.Handle(ctx, v, xmlpipe.Metadata{From: "tester", Profile: p})
	if err != nil {
		t.Fatal(err)
	}
	r, ok := resp.(*xmlpipe.RespondResponse)
	if !ok {
		t.Fatalf("response %T", resp)
	}
	return r.Payload.(*ToolResult)
}

// TestMountHeldToProfileNetwork: a mounted HTTP server is reached only from
// threads whose profile allows its host:port (and what it declares it
// dials); a refused call is the tool's answer, and nothing reaches the
// server.
func TestMountHeldToProfileNetwork(t *testing.T) {
	rec, raw := externalServer(t)
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	addr := u.Host
	_, tools := mount(t, Options{Name: "ext", URL: raw})
	_, declared := mount(t, Options{Name: "decl", URL: raw, Network: []string{"api.example.com:443"}})
	const payload = `<ext.search><query>q</query><tags>a</tags></ext.search>`
	count := func() int {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		return len(rec.args)
	}
	cases := []struct {
		name    string
		tool    Tool
		payload string
		p       xmlpipe.Profile
		refused string // "": the call goes through
	}{
		{"no profile", tools["ext.search"], payload, nil, ""},
		{"profile without a network list", tools["ext.search"], payload, allowList{name: "open"}, ""},
		{"server address allowed", tools["ext.search"], payload, allowList{name: "lan", addrs: []string{addr}}, ""},
		{"no network", tools["ext.search"], payload, allowList{name: "calc", addrs: []string{}},
			"mcp: network address not allowed by the thread's profile: " + addr + " (profile calc)"},
		{"another address", tools["ext.search"], payload, allowList{name: "web", addrs: []string{"example.com:443"}},
			"mcp: network address not allowed by the thread's profile: " + addr + " (profile web)"},
		{"declared address allowed", declared["decl.search"], strings.ReplaceAll(payload, "ext.", "decl."),
			allowList{name: "both", addrs: []string{addr, "api.example.com:443"}}, ""},
		{"declared address denied", declared["decl.search"], strings.ReplaceAll(payload, "ext.", "decl."),
			allowList{name: "lan", addrs: []string{addr}},
			"mcp: network address not allowed by the thread's profile: api.example.com:443 (profile lan): decl declares it dials it"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := count()
			r := callAs(t, c.tool, c.p, c.payload)
			if c.refused == "" {
				if r.Error != "" || r.Text != "ok" || count() != before+1 {
					t.Fatalf("want the call through: %+v (calls %d → %d)", r, before, count())
				}
				return
			}
			if r.Error != c.refused || r.Text != "" {
				t.Fatalf("refusal:\n got %q\nwant %q", r.Error, c.refused)
			}
			if count() != before {
				t.Fatal("a refused call reached the server")
			}
		})
	}
}

// TestMountStdioNetwork: a local server declares what it dials; without a
// declaration it may dial anything and only a profile without a network
// restriction reaches it. A refused call never reaches the process.
func TestMountStdioNetwork(t *testing.T) {
	t.Setenv(serverEnv, "1")
	start := func(name string, network []string) Tool {
		_, tools := mount(t, Options{Name: name, Command: []string{os.Args[0]}, Env: []string{serverEnv},
			Network: network, Timeout: 20 * time.Second})
		return tools[name+".calls"]
	}
	undeclared := start("wild", nil)
	none := start("quiet", []string{})
	gh := start("gh", []string{"api.github.com:443"})
	calc := allowList{name: "calc", addrs: []string{}}
	github := allowList{name: "github", addrs: []string{"api.github.com:443"}}
	star := allowList{name: "ops", addrs: []string{anyAddress}}

	if r := callAs(t, undeclared, calc, `<wild.calls/>`); r.Error != "mcp: network address not allowed by the thread's "+
		"profile: *:* (profile calc): wild is a local server that declares no network: it may dial any address" {
		t.Fatalf("undeclared from calc: %+v", r)
	}
	if r := callAs(t, undeclared, github, `<wild.calls/>`); !strings.Contains(r.Error, "declares no network") {
		t.Fatalf("undeclared from github: %+v", r)
	}
	// The refused calls never reached the process: its first call is this one.
	if r := callAs(t, undeclared, star, `<wild.calls/>`); r.Error != "" || r.Text != "1" {
		t.Fatalf("undeclared from a profile allowing any address: %+v", r)
	}
	if r := callAs(t, undeclared, nil, `<wild.calls/>`); r.Error != "" || r.Text != "2" {
		t.Fatalf("undeclared without a profile: %+v", r)
	}
	if r := callAs(t, none, calc, `<quiet.calls/>`); r.Error != "" || r.Text != "1" {
		t.Fatalf("network: [] from calc: %+v", r)
	}
	if r := callAs(t, gh, calc, `<gh.calls/>`); !strings.Contains(r.Error, "api.github.com:443 (profile calc): gh declares it dials it") {
		t.Fatalf("declared from calc: %+v", r)
	}
	if r := callAs(t, gh, github, `<gh.calls/>`); r.Error != "" || r.Text != "1" {
		t.Fatalf("declared from github: %+v", r)
	}
}

// TestServerAddress: a URL's dialled address, the scheme's port by default.
func TestServerAddress(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:8080/mcp": "127.0.0.1:8080", "https://mcp.example.com/x": "mcp.example.com:443",
		"http://mcp.example.com": "mcp.example.com:80", "http://[::1]:9/": "[::1]:9",
	} {
		got, err := serverAddress(in)
		if err != nil || got != want {
			t.Errorf("%s: %q %v, want %q", in, got, err, want)
		}
		if _, _, err := net.SplitHostPort(got); err != nil {
			t.Errorf("%s: %v", in, err)
		}
	}
	if _, err := serverAddress("http:///nohost"); !errors.Is(err, ErrServer) {
		t.Errorf("no host: %v", err)
	}
}
