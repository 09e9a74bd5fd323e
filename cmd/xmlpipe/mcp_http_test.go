package main

import (
	"bytes"
	"net"
	"strings"
	"testing"
)

// TestMCPHTTPAnnouncesReach: `xmlpipe mcp --http` names an endpoint a
// client on this machine can use, and an address on every interface
// (`:PORT`, 0.0.0.0, ::) is announced as such, as the main bus's is: its
// clients are not authenticated, so the operator must see that other
// machines reach the tools. (`--http :0` printed `http://[::]:PORT/` and
// nothing else.)
func TestMCPHTTPAnnouncesReach(t *testing.T) {
	tests := []struct {
		addr      string
		wantHost  string
		wantReach bool
	}{
		{"127.0.0.1:0", "127.0.0.1", false},
		{":0", "localhost", true},
		{"0.0.0.0:0", "localhost", true},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			var errOut bytes.Buffer
			e, err := listenMCPHTTP(tt.addr, streams{out: &bytes.Buffer{}, err: &errOut})
			if err != nil {
				t.Fatal(err)
			}
			defer e.fail()
			line := strings.TrimSuffix(errOut.String(), "\n")
			rest, ok := strings.CutPrefix(line, "xmlpipe mcp: streamable HTTP on http://")
			if !ok {
				t.Fatalf("announced %q", line)
			}
			hostport, note, _ := strings.Cut(rest, "/")
			host, _, err := net.SplitHostPort(hostport)
			if err != nil || host != tt.wantHost {
				t.Errorf("announced %q: host %q, want %q", line, host, tt.wantHost)
			}
			if got := strings.Contains(note, "every interface"); got != tt.wantReach {
				t.Errorf("announced %q: says every interface = %v, want %v", line, got, tt.wantReach)
			}
		})
	}
}
