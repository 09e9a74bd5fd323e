package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/pquerna/otp/totp"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/bus/auth/authtest"
	"github.com/xml-pipeline/xmlpipe/pump/bus/certs"
	"github.com/xml-pipeline/xmlpipe/registry/store"
)

const servePassword = "correct horse battery"

// addServeUser creates a user in the store of dataDir (before the organism
// runs) and returns its TOTP secret.
func addServeUser(t *testing.T, dataDir, name string, role auth.Role) string {
	t.Helper()
	st, err := store.Open(dataDir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	svc, err := auth.New(st, auth.Options{Argon2: auth.Argon2Params{Time: 1, MemoryKiB: 64, Threads: 1},
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	u, err := svc.AddUser(context.Background(), name, servePassword, role)
	if err != nil {
		t.Fatal(err)
	}
	return authtest.Secret(t, u)
}

// serveUsers is a hello-world directory whose data directory has two users
// (created before the organism runs): alice, an operator, and root, an
// admin; the fields hold their TOTP secrets.
type serveUsers struct {
	dir, dataDir string
	alice, root  string
}

func newServeUsers(t *testing.T) serveUsers {
	t.Helper()
	u := serveUsers{dir: helloDir(t)}
	u.dataDir = filepath.Join(u.dir, "data")
	u.alice = addServeUser(t, u.dataDir, "alice", auth.Operator)
	u.root = addServeUser(t, u.dataDir, "root", auth.Admin)
	return u
}

// lockedBuffer collects a process's output while it runs.
type lockedBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	changed chan struct{} // signalled (capacity 1) after every write
}

func newLockedBuffer() *lockedBuffer { return &lockedBuffer{changed: make(chan struct{}, 1)} }

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case l.changed <- struct{}{}:
	default:
	}
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitFor waits until the output contains want.
func (l *lockedBuffer) waitFor(t *testing.T, want string) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for !strings.Contains(l.String(), want) {
		select {
		case <-l.changed:
		case <-timeout:
			t.Fatalf("output lacks %q:\n%s", want, l.String())
		}
	}
}

// servedBus is a running `xmlpipe run` or `xmlpipe console --serve`
// process.
type servedBus struct {
	cmd              *exec.Cmd
	url, fingerprint string
	stdout, stderr   *lockedBuffer
	// stdin is the process's standard input when startServed was asked for
	// it (nil otherwise).
	stdin  io.WriteCloser
	exited chan error
	// running receives one value per "organism running" log line (one per
	// generation).
	running chan struct{}
}

// startRun starts `xmlpipe run --listen 127.0.0.1:0 --data DIR organism.yaml
// extra…` and waits for it to announce the bus.
func startRun(t *testing.T, dir, dataDir string, extra ...string) *servedBus {
	t.Helper()
	args := append([]string{"run", "--listen", "127.0.0.1:0", "--data", dataDir, "organism.yaml"}, extra...)
	return startServed(t, dir, false, args...)
}

// startServed starts the binary with args in dir (with a standard input
// the test writes to when withStdin) and waits for it to announce the bus.
func startServed(t *testing.T, dir string, withStdin bool, args ...string) *servedBus {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	s := &servedBus{cmd: cmd, stdout: newLockedBuffer(), stderr: newLockedBuffer(), exited: make(chan error, 1),
		running: make(chan struct{}, 8)}
	if withStdin {
		if s.stdin, err = cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stderrDone := make(chan struct{})
	go func() {
		defer close(stderrDone)
		lines := bufio.NewScanner(stderr)
		for lines.Scan() {
			s.stderr.Write([]byte(lines.Text() + "\n"))
			if strings.Contains(lines.Text(), "organism running") {
				s.running <- struct{}{}
			}
		}
	}()
	t.Cleanup(func() {
		if s.stdin != nil {
			s.stdin.Close()
		}
		_ = cmd.Process.Kill()
		<-s.exited
	})
	announced := make(chan struct{})
	go func() {
		lines := bufio.NewScanner(stdout)
		once := sync.Once{}
		for lines.Scan() {
			line := lines.Text()
			s.stdout.Write([]byte(line + "\n"))
			if u, ok := strings.CutPrefix(line, "xmlpipe: main bus on "); ok {
				s.url, _, _ = strings.Cut(u, " ")
				if strings.HasPrefix(s.url, "http://") {
					once.Do(func() { close(announced) })
				}
			}
			if fp, ok := strings.CutPrefix(line, "xmlpipe: certificate fingerprint SHA256 "); ok {
				s.fingerprint = fp
			}
			if strings.HasPrefix(line, "xmlpipe: connect with: ") {
				once.Do(func() { close(announced) })
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		<-stderrDone
		s.exited <- cmd.Wait()
	}()
	select {
	case <-announced:
	case err := <-s.exited:
		s.exited <- err
		t.Fatalf("xmlpipe %v exited: %v\nstdout:\n%s\nstderr:\n%s", args, err, s.stdout, s.stderr)
	case <-time.After(30 * time.Second):
		t.Fatalf("xmlpipe %v did not announce the bus\nstderr:\n%s", args, s.stderr)
	}
	return s
}

// wait waits for the process to exit and returns its exit code.
func (s *servedBus) wait(t *testing.T) int {
	t.Helper()
	select {
	case err := <-s.exited:
		s.exited <- err
		return s.cmd.ProcessState.ExitCode()
	case <-time.After(30 * time.Second):
		t.Fatalf("xmlpipe did not exit\nstderr:\n%s", s.stderr)
	}
	return -1
}

// client is an HTTPS client pinned to the served certificate.
func (s *servedBus) client(t *testing.T) *http.Client {
	t.Helper()
	if s.fingerprint == "" {
		return &http.Client{Timeout: 10 * time.Second}
	}
	fp, err := certs.ParseFingerprint(s.fingerprint)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: certs.PinnedClientConfig(fp)}}
}

// call sends a JSON request and decodes the JSON answer.
func (s *servedBus) call(t *testing.T, method, path, token string, body any) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	c := s.client(t)
	defer c.CloseIdleConnections()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp.StatusCode, out
}

func totpNow(t *testing.T, secret string) string {
	t.Helper()
	c, err := totp.GenerateCode(secret, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// login logs name in with its password and current TOTP code and returns
// the token.
func (s *servedBus) login(t *testing.T, name, secret string) string {
	t.Helper()
	status, body := s.call(t, "POST", "/auth/login", "", map[string]string{"username": name, "password": servePassword,
		"totp": totpNow(t, secret)})
	if status != 200 {
		t.Fatalf("login %s: %d %v", name, status, body)
	}
	return body["token"].(string)
}

// greetRemotely runs `xmlpipe console --connect` as name against the bus
// and checks that @greeter Dan is answered.
func (s *servedBus) greetRemotely(t *testing.T, dir, name, secret string) {
	t.Helper()
	stdin := name + "\n" + servePassword + "\n" + totpNow(t, secret) + "\n@greeter Dan\n/quit\n"
	r := runBinary(t, dir, stdin, "console", "--connect", s.url, "--fingerprint", s.fingerprint)
	if r.code != 0 || !strings.Contains(r.stdout, "[shouter] HELLO, DAN!") {
		t.Fatalf("console --connect: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
}

// stopThroughAPI asks the bus to stop the organism and checks the process
// exits 0.
func (s *servedBus) stopThroughAPI(t *testing.T, token string) {
	t.Helper()
	if status, body := s.call(t, "POST", "/api/v1/organism/stop", token, nil); status != 202 {
		t.Fatalf("stop: %d %v", status, body)
	}
	if code := s.wait(t); code != 0 {
		t.Errorf("exit %d after stop\nstdout:\n%s\nstderr:\n%s", code, s.stdout, s.stderr)
	}
}

// checkInsecure checks the bus of --insecure-dev: plain HTTP, no token
// needed.
func (s *servedBus) checkInsecure(t *testing.T) {
	t.Helper()
	if !strings.HasPrefix(s.url, "http://127.0.0.1:") {
		t.Fatalf("url %q", s.url)
	}
	if status, body := s.call(t, "GET", "/api/v1/agents/greeter", "", nil); status != 200 || body["name"] != "greeter" {
		t.Errorf("agent without a token: %d %v", status, body)
	}
}

func TestRunServesBusAndConnectConsole(t *testing.T) {
	u := newServeUsers(t)
	dir := u.dir
	s := startRun(t, dir, u.dataDir)
	if !strings.Contains(s.stdout.String(), "xmlpipe console --connect "+s.url+" --fingerprint "+s.fingerprint) {
		t.Errorf("no connect hint:\n%s", s.stdout)
	}
	if status, body := s.call(t, "GET", "/health", "", nil); status != 200 || body["status"] != "ok" {
		t.Fatalf("health: %d %v", status, body)
	}

	// The remote console: credentials are the first three lines of stdin.
	s.greetRemotely(t, dir, "alice", u.alice)
	r := runBinary(t, dir, "alice\nwrong password\n000000\n", "console", "--connect", s.url, "--fingerprint", s.fingerprint)
	// The refusal reads once: not "xmlpipe console: console: login failed".
	if r.code != 1 || !strings.Contains(r.stderr, "xmlpipe console: login failed: Invalid credentials\n") {
		t.Errorf("wrong password: exit %d, stderr %s", r.code, r.stderr)
	}
	r = runBinary(t, dir, "alice\n"+servePassword+"\n000000\n", "console", "--connect", s.url)
	if r.code != 1 || !strings.Contains(r.stderr, "certificate") {
		t.Errorf("unpinned self-signed certificate: exit %d, stderr %s", r.code, r.stderr)
	}

	// Reload (in place: answered once applied), then stop, through the API.
	token := s.login(t, "root", u.root)
	if status, body := s.call(t, "POST", "/api/v1/organism/reload", token, nil); status != 200 || body["status"] != "reloaded" {
		t.Fatalf("reload: %d %v", status, body)
	}
	if status, body := s.call(t, "GET", "/api/v1/organism", token, nil); status != 200 || body["name"] != "hello-world" {
		t.Fatalf("after the reload: %d %v", status, body)
	}
	s.stopThroughAPI(t, token)
	if n := strings.Count(s.stderr.String(), "organism running"); n != 1 {
		t.Errorf("the organism started %d times", n)
	}
	for _, want := range []string{"reloading the organism", "organism reloaded", `msg="stop requested" via="the bus API"`, "msg=stopped"} {
		if !strings.Contains(s.stderr.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, s.stderr)
		}
	}
	// The greeting's output line names the thread it was printed on.
	if output := regexp.MustCompile(`msg=output thread=[0-9a-f-]{36} from=shouter text="HELLO, DAN!"`); !output.MatchString(s.stderr.String()) {
		t.Errorf("no output line naming its thread:\n%s", s.stderr)
	}
}

func TestRunRefusesWithoutUsers(t *testing.T) {
	dir := helloDir(t)
	r := runBinary(t, dir, "", "run", "--listen", "127.0.0.1:0", "organism.yaml")
	if r.code != 1 || !strings.Contains(r.stderr, "xmlpipe users add NAME --role admin --config organism.yaml") ||
		!strings.Contains(r.stderr, "--insecure-dev") {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
}

func TestRunInsecureDevServe(t *testing.T) {
	dir := helloDir(t)
	s := startRun(t, dir, filepath.Join(dir, "data"), "--insecure-dev")
	s.checkInsecure(t)
	// The server needs no login (it says so on GET /auth/me): the console
	// asks for none, so the first piped line is console input, not a name.
	r := runBinary(t, dir, "@greeter Dev\n/quit\n", "console", "--connect", s.url)
	if r.code != 0 || !strings.Contains(r.stdout, "[shouter] HELLO, DEV!") ||
		strings.Contains(r.stdout+r.stderr, "Username") {
		t.Errorf("console: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := s.wait(t); code != 0 {
		t.Errorf("exit %d\n%s", code, s.stderr)
	}
	if !strings.Contains(s.stderr.String(), "INSECURE DEV MODE") {
		t.Errorf("insecure mode not logged:\n%s", s.stderr)
	}
}

// TestAnnounceNamesEveryInterface: the announced URL is one this machine
// can connect to, and a bus bound to every interface (0.0.0.0, ::) says
// that other machines can reach it instead of passing for a local one.
func TestAnnounceNamesEveryInterface(t *testing.T) {
	tests := []struct {
		addr string
		want string
	}{
		{"127.0.0.1:8765", "xmlpipe: main bus on https://127.0.0.1:8765"},
		{"[::1]:8765", "xmlpipe: main bus on https://[::1]:8765"},
		{"0.0.0.0:8765", "xmlpipe: main bus on https://localhost:8765 (listening on every interface: other machines can reach it)"},
		{"[::]:8765", "xmlpipe: main bus on https://localhost:8765 (listening on every interface: other machines can reach it)"},
	}
	for _, tc := range tests {
		t.Run(tc.addr, func(t *testing.T) {
			addr, err := net.ResolveTCPAddr("tcp", tc.addr)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			r := &serveRunner{std: streams{out: &out, err: io.Discard}}
			r.announce(addr, "AA:BB")
			first, _, _ := strings.Cut(out.String(), "\n")
			if diff := cmp.Diff(tc.want, first); diff != "" {
				t.Errorf("announcement (-want +got):\n%s", diff)
			}
		})
	}
}

// TestServeWithoutUsersSaysStopFirst: an organism with an identity but no
// users serves its bus (federation peers need no user), and its warning says
// on standard error to stop it before adding one — the users commands
// refuse while it holds the data directory, so the hint alone led to a
// "locked" error. console --serve says it as run does, not in the console's
// output where it scrolls away with the conversation.
func TestServeWithoutUsersSaysStopFirst(t *testing.T) {
	for _, tc := range []struct {
		name    string
		console bool
		args    []string
	}{
		{"run", false, []string{"run"}},
		{"console --serve", true, []string{"console", "--serve"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := helloDir(t)
			data := filepath.Join(dir, "data")
			if r := runBinary(t, dir, "", "keys", "init", "--data", data); r.code != 0 {
				t.Fatalf("keys init: exit %d\n%s", r.code, r.stderr)
			}
			args := append(append([]string{}, tc.args...), "--listen", "127.0.0.1:0", "--data", data, "organism.yaml")
			s := startServed(t, dir, tc.console, args...)
			if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if code := s.wait(t); code != 0 {
				t.Fatalf("exit %d\nstderr:\n%s", code, s.stderr)
			}
			want := "no bus users yet: only federation peers can connect (to add one, stop the organism, then: xmlpipe users add NAME --role admin"
			if !strings.Contains(s.stderr.String(), want) {
				t.Errorf("stderr lacks %q:\nstderr:\n%s\nstdout:\n%s", want, s.stderr, s.stdout)
			}
		})
	}
}
