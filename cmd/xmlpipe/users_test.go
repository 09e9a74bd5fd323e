package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/boombuler/barcode/qr"
	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// usersRun runs `xmlpipe users args…` in-process with stdin and returns the
// exit code, stdout and stderr.
func usersRun(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), append([]string{"users"}, args...), streams{strings.NewReader(stdin), &out, &errOut})
	return result{code, out.String(), errOut.String()}
}

// cheapUserHashes makes the users commands hash with cheap argon2id
// parameters for the test.
func cheapUserHashes(t *testing.T) {
	t.Helper()
	saved := usersArgon2
	usersArgon2 = auth.Argon2Params{Time: 1, MemoryKiB: 64, Threads: 1}
	t.Cleanup(func() { usersArgon2 = saved })
}

// otpURLPattern matches a provisioning URL line.
var otpURLPattern = regexp.MustCompile(`(?m)^otpauth://totp/\S+$`)

// secretFrom returns the TOTP secret of the URL printed in out.
func secretFrom(t *testing.T, out string) (string, *otp.Key) {
	t.Helper()
	url := otpURLPattern.FindString(out)
	if url == "" {
		t.Fatalf("no otpauth:// URL in output:\n%s", out)
	}
	key, err := otp.NewKeyFromURL(url)
	if err != nil {
		t.Fatal(err)
	}
	return key.Secret(), key
}

// loginWith opens the store in data and logs user in with password and the
// current code of secret through the auth service.
func loginWith(t *testing.T, data, user, password, secret string) error {
	t.Helper()
	st, err := store.Open(data, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	svc, err := auth.New(st, auth.Options{})
	if err != nil {
		t.Fatal(err)
	}
	code, err := totp.GenerateCode(secret, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	_, err = svc.Login(context.Background(), auth.Credentials{Username: user, Password: password, TOTP: code, Addr: "127.0.0.1"})
	return err
}

func TestUsersCommands(t *testing.T) {
	cheapUserHashes(t)
	dir := helloDir(t)
	data := filepath.Join(t.TempDir(), "state")
	cfg := filepath.Join(dir, "organism.yaml")

	// add creates the data directory and prints the provisioning URL only
	// (stdout is not a terminal).
	r := usersRun(t, "correct horse battery\n", "add", "alice", "--password-stdin", "--data", data, "--config", cfg)
	if r.code != 0 {
		t.Fatalf("add: exit %d: %s", r.code, r.stderr)
	}
	if strings.TrimSpace(r.stdout) != otpURLPattern.FindString(r.stdout) {
		t.Errorf("add printed more than the URL to a non-terminal:\n%s", r.stdout)
	}
	aliceSecret, key := secretFrom(t, r.stdout)
	if key.Issuer() != "xmlpipe" || key.AccountName() != "alice@hello-world" {
		t.Errorf("issuer %q, account %q", key.Issuer(), key.AccountName())
	}
	if !strings.Contains(r.stderr, "alice (operator) created") {
		t.Errorf("add stderr: %s", r.stderr)
	}
	if err := loginWith(t, data, "alice", "correct horse battery", aliceSecret); err != nil {
		t.Fatalf("login with the printed secret: %v", err)
	}

	r = usersRun(t, "bob's password\r\n", "add", "bob", "--role", "viewer", "--password-stdin", "--data", data)
	if r.code != 0 {
		t.Fatalf("add bob: exit %d: %s", r.code, r.stderr)
	}
	bobSecret, _ := secretFrom(t, r.stdout)

	r = usersRun(t, "", "list", "--data", data)
	if r.code != 0 {
		t.Fatalf("list: exit %d: %s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 3 || !regexp.MustCompile(`^NAME\s+ROLE\s+PROFILE\s+TOTP\s+CREATED\s+LAST LOGIN$`).MatchString(lines[0]) ||
		!regexp.MustCompile(`^alice\s+operator\s+-\s+yes\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\s+\d{4}-`).MatchString(lines[1]) ||
		!regexp.MustCompile(`^bob\s+viewer\s+-\s+yes\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\s+never$`).MatchString(lines[2]) {
		t.Errorf("list:\n%s", r.stdout)
	}

	// passwd: the new password works (bob's \r\n line ending was stripped
	// at add, so "bob's password" is his).
	if err := loginWith(t, data, "bob", "bob's password", bobSecret); err != nil {
		t.Fatalf("bob's login: %v", err)
	}
	r = usersRun(t, "a new password for bob\n", "passwd", "bob", "--password-stdin", "--data", data)
	if r.code != 0 || !strings.Contains(r.stdout, "Password of bob changed") {
		t.Fatalf("passwd: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if err := loginWith(t, data, "bob", "bob's password", bobSecret); !errors.Is(err, auth.ErrInvalidCredentials) {
		t.Errorf("old password after passwd: %v", err)
	}

	// reset-totp: a new secret, which works; the old one does not.
	r = usersRun(t, "", "reset-totp", "alice", "--data", data)
	if r.code != 0 {
		t.Fatalf("reset-totp: exit %d: %s", r.code, r.stderr)
	}
	newSecret, _ := secretFrom(t, r.stdout)
	if newSecret == aliceSecret {
		t.Fatal("reset-totp kept the secret")
	}
	if err := loginWith(t, data, "alice", "correct horse battery", newSecret); err != nil {
		t.Fatalf("login with the new secret: %v", err)
	}

	r = usersRun(t, "", "role", "bob", "admin", "--data", data)
	if r.code != 0 || !strings.Contains(r.stdout, "bob is now admin") {
		t.Fatalf("role: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = usersRun(t, "", "remove", "alice", "--data", data)
	if r.code != 0 || !strings.Contains(r.stdout, "alice removed") {
		t.Fatalf("remove: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = usersRun(t, "", "list", "--data", data)
	if r.code != 0 || strings.Contains(r.stdout, "alice") || !regexp.MustCompile(`(?m)^bob\s+admin\s`).MatchString(r.stdout) {
		t.Fatalf("list after remove and role: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestUsersProfile: users add --profile and users profile give a user a
// security profile the organism.yaml defines (and refuse one it does not,
// changing nothing); list shows it; a login's session carries it.
func TestUsersProfile(t *testing.T) {
	cheapUserHashes(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "organism.yaml")
	if err := os.WriteFile(cfg, []byte(`organism: {name: profiled}
profiles:
  calc: {listeners: [calculate]}
  readers: {listeners: [greeter]}
listeners:
  - {name: greeter, payload_class: handlers.hello.Greeting, handler: handlers.hello.handle_greeting, description: Greets}
  - {name: calculate, payload_class: tools.Calculate, handler: tools.Calculate, description: Evaluates arithmetic}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "state")
	r := usersRun(t, "correct horse battery\n", "add", "carol", "--profile", "nope", "--password-stdin", "--data", data, "--config", cfg)
	if r.code != exitUsage || !strings.Contains(r.stderr, `no profile "nope" (profiles: calc, readers)`) {
		t.Fatalf("add with an undefined profile: exit %d: %s", r.code, r.stderr)
	}
	r = usersRun(t, "correct horse battery\n", "add", "carol", "--profile", "calc", "--password-stdin", "--data", data, "--config", cfg)
	if r.code != 0 || !strings.Contains(r.stderr, "carol (operator, profile calc) created") {
		t.Fatalf("add --profile: exit %d: %s", r.code, r.stderr)
	}
	secret, _ := secretFrom(t, r.stdout)
	r = usersRun(t, "", "list", "--data", data, "--config", cfg)
	if r.code != 0 || !regexp.MustCompile(`(?m)^carol\s+operator\s+calc\s+yes\s`).MatchString(r.stdout) {
		t.Fatalf("list: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = usersRun(t, "", "profile", "carol", "wider", "--data", data, "--config", cfg)
	if r.code != exitUsage || !strings.Contains(r.stderr, `no profile "wider"`) {
		t.Fatalf("profile to an undefined one: exit %d: %s", r.code, r.stderr)
	}
	// Profile names are keys matched exactly, as route --profile and the
	// configuration match them: another case is refused with a hint.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"profile", "carol", "READERS"}, `no profile "READERS" (did you mean "readers"?)`},
		{[]string{"add", "dave", "--profile", "Calc", "--password-stdin"}, `no profile "Calc" (did you mean "calc"?)`},
	} {
		r = usersRun(t, "correct horse battery\n", append(tc.args, "--data", data, "--config", cfg)...)
		if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) {
			t.Fatalf("users %v: exit %d: %s; want %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
	r = usersRun(t, "", "profile", "carol", "readers", "--data", data, "--config", cfg)
	if r.code != 0 || !strings.Contains(r.stdout, "carol now has profile readers") {
		t.Fatalf("profile: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	st, err := store.Open(data, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := auth.New(st, auth.Options{})
	if err != nil {
		t.Fatal(err)
	}
	code, err := totp.GenerateCode(secret, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	sess, err := svc.Login(context.Background(), auth.Credentials{Username: "carol", Password: "correct horse battery", TOTP: code, Addr: "127.0.0.1"})
	if err != nil || sess.Profile != "readers" {
		t.Errorf("carol's session: profile %q, %v; want readers", sess.Profile, err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	r = usersRun(t, "", "profile", "carol", "", "--data", data, "--config", cfg)
	if r.code != 0 || !strings.Contains(r.stdout, "carol has no profile now") {
		t.Fatalf("profile \"\": exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = usersRun(t, "", "profile", "nobody", "calc", "--data", data, "--config", cfg)
	if r.code == 0 || !strings.Contains(r.stderr, "unknown user") {
		t.Errorf("profile of an unknown user: exit %d: %s", r.code, r.stderr)
	}
}

func TestUsersErrors(t *testing.T) {
	cheapUserHashes(t)
	data := filepath.Join(t.TempDir(), "state")
	missing := filepath.Join(t.TempDir(), "missing")
	if r := usersRun(t, "long enough pw\n", "add", "alice", "--password-stdin", "--data", data); r.code != 0 {
		t.Fatalf("add: exit %d: %s", r.code, r.stderr)
	}
	tests := []struct {
		name    string
		stdin   string
		args    []string
		code    int
		wantErr string
	}{
		{"no subcommand", "", nil, exitUsage, "usage: xmlpipe users"},
		{"unknown subcommand", "", []string{"frobnicate"}, exitUsage, "usage: xmlpipe users"},
		{"add without name", "", []string{"add", "--data", data}, exitUsage, "usage: xmlpipe users add"},
		{"user exists", "long enough pw\n", []string{"add", "alice", "--password-stdin", "--data", data}, exitFailure, `user already exists: "alice"`},
		{"bad role flag", "long enough pw\n", []string{"add", "bob", "--role", "owner", "--password-stdin", "--data", data}, exitUsage, `unknown role: "owner"`},
		{"bad name", "long enough pw\n", []string{"add", "Bob", "--password-stdin", "--data", data}, exitUsage, "invalid user name"},
		{"short password", "short\n", []string{"add", "bob", "--password-stdin", "--data", data}, exitFailure, "at least 8"},
		{"empty stdin", "", []string{"add", "bob", "--password-stdin", "--data", data}, exitFailure, "no password on stdin"},
		{"no terminal", "long enough pw\n", []string{"add", "bob", "--data", data}, exitFailure, "--password-stdin"},
		{"remove unknown", "", []string{"remove", "carol", "--data", data}, exitFailure, `unknown user: "carol"`},
		{"passwd unknown", "long enough pw\n", []string{"passwd", "carol", "--password-stdin", "--data", data}, exitFailure, `unknown user: "carol"`},
		{"reset-totp unknown", "", []string{"reset-totp", "carol", "--data", data}, exitFailure, `unknown user: "carol"`},
		{"role unknown user", "", []string{"role", "carol", "admin", "--data", data}, exitFailure, `unknown user: "carol"`},
		{"bad role", "", []string{"role", "alice", "root", "--data", data}, exitUsage, `unknown role: "root"`},
		{"role without role", "", []string{"role", "alice", "--data", data}, exitUsage, "usage: xmlpipe users role"},
		{"list without data dir", "", []string{"list", "--data", missing}, exitFailure, "no users yet (create one with: xmlpipe users add NAME)"},
		{"bad config", "", []string{"list", "--config", filepath.Join(missing, "organism.yaml")}, exitFailure, "organism.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := usersRun(t, tt.stdin, tt.args...)
			if r.code != tt.code || !strings.Contains(r.stderr, tt.wantErr) {
				t.Fatalf("exit %d, stderr:\n%s\nwant exit %d and %q", r.code, r.stderr, tt.code, tt.wantErr)
			}
		})
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("list created the missing data directory: %v", err)
	}
}

// TestUsersLocked: with the organism holding the data directory, the users
// commands say to stop it.
func TestUsersLocked(t *testing.T) {
	cheapUserHashes(t)
	data := t.TempDir()
	st, err := store.Open(data, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r := usersRun(t, "long enough pw\n", "add", "alice", "--password-stdin", "--data", data)
	if r.code != exitFailure || !strings.Contains(r.stderr, "locked") || !strings.Contains(r.stderr, "stop it first") {
		t.Fatalf("add on a locked store: exit %d\n%s", r.code, r.stderr)
	}
}

// TestUsersQRText: the half-block drawing holds exactly the QR code's modules,
// light as blocks, with a two-module quiet zone.
func TestUsersQRText(t *testing.T) {
	const url = "otpauth://totp/xmlpipe:alice@hello-world?algorithm=SHA1&digits=6&issuer=xmlpipe&period=30&secret=JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP"
	text, err := qrText(url)
	if err != nil {
		t.Fatal(err)
	}
	code, err := qr.Encode(url, qr.M, qr.Auto)
	if err != nil {
		t.Fatal(err)
	}
	n := code.Bounds().Dx()
	// Rebuild the module grid from the drawing.
	var grid [][]bool
	for line := range strings.SplitSeq(strings.TrimSuffix(text, "\n"), "\n") {
		if !strings.HasPrefix(line, qrColours) || !strings.HasSuffix(line, qrReset) {
			t.Fatalf("line without colours: %q", line)
		}
		cells := []rune(strings.TrimSuffix(strings.TrimPrefix(line, qrColours), qrReset))
		top, bottom := make([]bool, len(cells)), make([]bool, len(cells))
		for i, c := range cells {
			switch c {
			case '█':
				top[i], bottom[i] = true, true
			case '▀':
				top[i] = true
			case '▄':
				bottom[i] = true
			case ' ':
			default:
				t.Fatalf("unexpected cell %q", c)
			}
		}
		grid = append(grid, top, bottom)
	}
	size := n + 2*qrQuiet
	if len(grid) != size+1 || len(grid[0]) != size {
		t.Fatalf("drawing is %d×%d half-rows, want %d×%d", len(grid[0]), len(grid), size, size+1)
	}
	for y := range size {
		for x := range size {
			mx, my := x-qrQuiet, y-qrQuiet
			want := true
			if mx >= 0 && my >= 0 && mx < n && my < n {
				r, _, _, _ := code.At(mx, my).RGBA()
				want = r >= 0x8000
			}
			if grid[y][x] != want {
				t.Fatalf("module (%d,%d): drawn light=%v, want %v", mx, my, grid[y][x], want)
			}
		}
	}
	for x, light := range grid[size] {
		if light {
			t.Fatalf("half-row below the quiet zone is drawn at %d", x)
		}
	}
}

func TestUsersGroupsOf4(t *testing.T) {
	for in, want := range map[string]string{"": "", "ABC": "ABC", "ABCD": "ABCD", "ABCDEFGHIJ": "ABCD EFGH IJ"} {
		if got := groupsOf4(in); got != want {
			t.Errorf("groupsOf4(%q) = %q, want %q", in, got, want)
		}
	}
}
