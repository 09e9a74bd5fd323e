package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// startConsoleServe starts `xmlpipe console --serve --listen 127.0.0.1:0
// --data DIR extra… organism.yaml` with a standard input the test writes,
// and waits for it to announce the bus.
func startConsoleServe(t *testing.T, dir, dataDir string, extra ...string) *servedBus {
	t.Helper()
	args := append([]string{"console", "--serve", "--listen", "127.0.0.1:0", "--data", dataDir}, extra...)
	return startServed(t, dir, true, append(args, "organism.yaml")...)
}

// say writes a line to the served console's standard input.
func (s *servedBus) say(t *testing.T, line string) {
	t.Helper()
	if _, err := s.stdin.Write([]byte(line + "\n")); err != nil {
		t.Fatalf("console input %q: %v", line, err)
	}
}

func TestConsoleServe(t *testing.T) {
	u := newServeUsers(t)
	s := startConsoleServe(t, u.dir, u.dataDir)
	if !strings.HasPrefix(s.url, "https://127.0.0.1:") || s.fingerprint == "" ||
		!strings.Contains(s.stdout.String(), "xmlpipe console --connect "+s.url+" --fingerprint "+s.fingerprint) {
		t.Fatalf("announcement:\n%s", s.stdout)
	}

	// The in-process console works as without --serve…
	s.say(t, "@greeter Lo")
	s.stdout.waitFor(t, "[shouter] HELLO, LO!")

	// …and the same organism answers on the main bus, to a remote console.
	s.greetRemotely(t, u.dir, "alice", u.alice)
	token := s.login(t, "root", u.root)
	if status, body := s.call(t, "GET", "/api/v1/organism", token, nil); status != 200 || body["name"] != "hello-world" {
		t.Errorf("organism: %d %v", status, body)
	}

	// Reload works as in xmlpipe run: in place, answered once applied; a
	// configuration that does not load is refused (422) and the organism
	// goes on. Stop through the API ends the console.
	if status, body := s.call(t, "POST", "/api/v1/organism/reload", token, nil); status != 200 || body["status"] != "reloaded" {
		t.Errorf("reload: %d %v", status, body)
	}
	cfg := filepath.Join(u.dir, "organism.yaml")
	good, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, cfg, string(good)+"this is: [not yaml\n")
	if status, body := s.call(t, "POST", "/api/v1/organism/reload", token, nil); status != 422 ||
		!strings.Contains(fmt.Sprint(body["error"]), "reload refused") {
		t.Errorf("reload of a broken organism.yaml: %d %v", status, body)
	}
	s.say(t, "@greeter Mo")
	s.stdout.waitFor(t, "[shouter] HELLO, MO!")
	s.stopThroughAPI(t, token)
}

func TestConsoleServeQuitClosesBus(t *testing.T) {
	dir := helloDir(t)
	s := startConsoleServe(t, dir, filepath.Join(dir, "data"), "--insecure-dev")
	s.checkInsecure(t)
	s.say(t, "/quit")
	if code := s.wait(t); code != 0 {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, s.stdout, s.stderr)
	}
	if out := s.stdout.String() + s.stderr.String(); !strings.Contains(out, "INSECURE DEV MODE") {
		t.Errorf("insecure mode not announced:\n%s", out)
	}
	r := runBinary(t, dir, "dev\nx\n0\n", "console", "--connect", s.url)
	if r.code != 1 {
		t.Errorf("the bus still answers after /quit: exit %d\n%s", r.code, r.stderr)
	}
}

func TestConsoleServeArguments(t *testing.T) {
	dir := helloDir(t)
	tests := []struct {
		name    string
		args    []string
		code    int
		wantErr string
	}{
		{"no users", []string{"console", "--serve", "--listen", "127.0.0.1:0", "organism.yaml"}, 1,
			"xmlpipe users add NAME --role admin --config organism.yaml"},
		{"listen without serve", []string{"console", "--listen", "127.0.0.1:0", "organism.yaml"}, 2,
			"--listen and --insecure-dev need --serve"},
		{"insecure without serve", []string{"console", "--insecure-dev"}, 2, "need --serve"},
		{"serve with connect", []string{"console", "--serve", "--connect", "https://127.0.0.1:1"}, 2,
			"--connect takes no organism.yaml, --data or --serve"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runBinary(t, dir, "", tt.args...)
			if r.code != tt.code || !strings.Contains(r.stderr, tt.wantErr) {
				t.Errorf("exit %d, want %d; stderr lacks %q?\n%s", r.code, tt.code, tt.wantErr, r.stderr)
			}
		})
	}
}

// TestConnectUntrustedCertificateHint: --connect to a bus whose certificate
// this machine does not trust, without --fingerprint, says how to pin it
// rather than only relaying the x509 error.
func TestConnectUntrustedCertificateHint(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.NotFoundHandler())
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake
	srv.StartTLS()
	defer srv.Close()
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"console", "--connect", srv.URL},
		streams{strings.NewReader("admin\nsecret\n123456\n"), &out, &errOut})
	if code != exitFailure || !strings.Contains(errOut.String(), "certificate") ||
		!strings.Contains(errOut.String(), "pass --fingerprint") {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut.String())
	}
}
