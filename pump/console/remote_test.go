package console_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/bus"
	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/bus/certs"
	"github.com/xml-pipeline/xmlpipe/pump/bus/client"
	"github.com/xml-pipeline/xmlpipe/pump/console"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

const (
	remoteWait = 10 * time.Second
	password   = "correct horse battery"
)

// remoteBus is a durable hello-world organism served by a bus on loopback.
type remoteBus struct {
	url, fingerprint string
	// local is the organism's in-process backend (what an in-process
	// console runs over).
	local *organism.Local
	auth  *auth.Service
	mu    sync.Mutex
	now   time.Time
}

// clock is the auth service's clock; code moves it one TOTP step on, so
// every login gets a fresh code.
func (b *remoteBus) clock() time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.now
}

func (b *remoteBus) code(t *testing.T, secret string) string {
	t.Helper()
	b.mu.Lock()
	b.now = b.now.Add(30 * time.Second)
	now := b.now
	b.mu.Unlock()
	c, err := totp.GenerateCode(secret, now)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func startBus(t *testing.T) *remoteBus {
	t.Helper()
	return startBusWith(t, func(o organism.Options) (*organism.Organism, error) {
		return organism.Load("testdata/organism.yaml", o)
	})
}

// startBusWith is startBus over the organism build assembles.
func startBusWith(t *testing.T, build func(organism.Options) (*organism.Organism, error)) *remoteBus {
	t.Helper()
	logger := slog.New(slog.DiscardHandler)
	l, err := organism.Assemble(organism.Options{Logger: logger, DataDir: t.TempDir()}, build)
	if err != nil {
		t.Fatal(err)
	}
	o := l.Organism()
	booted := make(chan string, 8)
	stop := o.Pump.Subscribe(pump.OutletFunc(func(e pump.Event) {
		if e.Kind == pump.EventComplete {
			booted <- e.Conversation
		}
	}))
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := o.Shutdown(context.Background()); err != nil {
			t.Errorf("organism shutdown: %v", err)
		}
	})
	for conv := range booted {
		if conv == o.BootThread {
			break
		}
	}
	stop()
	b := &remoteBus{now: time.Date(2026, 3, 1, 12, 0, 10, 0, time.UTC), local: l}
	b.auth, err = auth.New(o.Store(), auth.Options{Argon2: auth.Argon2Params{Time: 1, MemoryKiB: 64, Threads: 1},
		Clock: b.clock, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := certs.SelfSigned(t.TempDir(), nil, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	b.fingerprint = certs.Fingerprint(cert)
	srv, err := bus.New(bus.Options{TLS: certs.ServerConfig(cert), Auth: b.auth, Organism: o, Console: l, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b.url = "https://" + ln.Addr().String()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), remoteWait)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("bus shutdown: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return b
}

// user adds a user and returns its TOTP secret.
func (b *remoteBus) user(t *testing.T, name string, role auth.Role) string {
	t.Helper()
	u, err := b.auth.AddUser(context.Background(), name, password, role)
	if err != nil {
		t.Fatal(err)
	}
	key, err := otp.NewKeyFromURL(u)
	if err != nil {
		t.Fatal(err)
	}
	return key.Secret()
}

func (b *remoteBus) dial(t *testing.T, name, secret string) *console.Remote {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), remoteWait)
	defer cancel()
	r, err := console.Dial(ctx, b.url, b.fingerprint, auth.Credentials{Username: name, Password: password,
		TOTP: b.code(t, secret)})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func TestRemoteConsoleGreeter(t *testing.T) {
	b := startBus(t)
	r := b.dial(t, "rita", b.user(t, "rita", auth.Operator))
	if r.Username != "rita" || r.Role != "operator" {
		t.Errorf("logged in as %s/%s", r.Username, r.Role)
	}
	con, err := console.New(r, console.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), remoteWait)
	defer cancel()
	in := "@greeter Dan\n@nobody hi\n/listeners\n" + `@greeter {"Name": "Ann"}` + "\n" + `@greeter {"Name": 5}` + "\n" +
		`@shouter <GreetingResponse><Message>hey</Message><OriginalSender>response-handler</OriginalSender></GreetingResponse>` + "\n/status\n/quit\n"
	if err := con.Run(ctx, strings.NewReader(in), &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"xmlpipe console — organism hello-world",
		"[shouter] HELLO, DAN!",
		"Unknown listener: nobody",
		"greeter",
		"Organism: hello-world",
		"[shouter] HELLO, ANN!",
		`Invalid payload for greeter: Name: want a string, got the number 5`,
		"[shouter] HEY",
		"Threads: 0 active, ",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if i, j := strings.Index(out.String(), "HELLO, DAN!"), strings.Index(out.String(), "Unknown listener"); i > j {
		t.Errorf("the shout came after the next command:\n%s", out.String())
	}
}

func TestRemoteBackend(t *testing.T) {
	b := startBus(t)
	secret := b.user(t, "ron", auth.Operator)
	r := b.dial(t, "ron", secret)
	ctx := context.Background()

	got := make(chan organism.Output, 16)
	defer r.Subscribe(func(o organism.Output) { got <- o })()
	thread, err := r.Send(ctx, organism.Message{Target: "greeter", Text: "Ron"})
	if err != nil || !stage.IsThreadID(thread) {
		t.Fatalf("send: %q %v", thread, err)
	}
	var printed string
	for done := false; !done; {
		select {
		case o := <-got:
			if o.Conversation != thread {
				t.Fatalf("output of another conversation: %+v", o)
			}
			switch o.Kind {
			case organism.OutputPrint:
				printed = "[" + o.From + "] " + o.Text
			case organism.OutputComplete:
				done = true
			}
		case <-time.After(remoteWait):
			t.Fatal("no completion")
		}
	}
	if printed != "[shouter] HELLO, RON!" {
		t.Errorf("printed %q", printed)
	}

	ls, err := r.Listeners(ctx)
	if err != nil || len(ls) != 10 || ls[7].Name != "greeter" || !ls[7].Agent || ls[7].RootTag != "Greeting" {
		t.Errorf("listeners: %+v %v", ls, err)
	}
	st, err := r.Status(ctx)
	if err != nil || st.Organism != "hello-world" || st.Listeners != 10 || st.Processed == 0 {
		t.Errorf("status: %+v %v", st, err)
	}
	if _, err := r.Threads(ctx); err != nil {
		t.Errorf("threads: %v", err)
	}
	if _, err := r.Monitor(ctx, "*"); err != nil {
		t.Errorf("monitor: %v", err)
	}
	thread, err = r.Send(ctx, organism.Message{Target: "greeter", Payload: []byte(`{"Name": "Pat"}`)})
	if err != nil || !stage.IsThreadID(thread) {
		t.Errorf("send payload: %q %v", thread, err)
	}
	if _, err := r.Send(ctx, organism.Message{Target: "greeter", Payload: []byte(`{"Nom": "Pat"}`)}); !errors.Is(err, organism.ErrBadPayload) ||
		err.Error() != `invalid payload for greeter: unknown field "Nom" (the fields are Name)` {
		t.Errorf("bad payload: %v", err)
	}
	if _, err := r.Send(ctx, organism.Message{Target: "nobody", Text: "x"}); !errors.Is(err, organism.ErrUnknownListener) {
		t.Errorf("unknown listener: %v", err)
	}
	if _, err := r.Send(ctx, organism.Message{Target: "system.todo", Text: "x"}); !errors.Is(err, organism.ErrNoTextField) {
		t.Errorf("no text field: %v", err)
	}
	var rej *organism.Rejection
	if _, err := r.Send(ctx, organism.Message{Target: "system.todo-complete", Text: "x"}); !errors.As(err, &rej) || rej.Huh != failure.HuhPayload {
		t.Errorf("refused message: %v", err)
	}
	if err := r.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if _, err := r.Status(ctx); !errors.Is(err, console.ErrDisconnected) {
		t.Errorf("status after close: %v", err)
	}
}

func TestRemoteDialErrors(t *testing.T) {
	b := startBus(t)
	secret := b.user(t, "rex", auth.Viewer)
	ctx := context.Background()
	creds := auth.Credentials{Username: "rex", Password: "wrong password", TOTP: b.code(t, secret)}
	if _, err := console.Dial(ctx, b.url, b.fingerprint, creds); !errors.Is(err, console.ErrLogin) {
		t.Errorf("wrong password: %v", err)
	}
	creds.Password, creds.TOTP = password, b.code(t, secret)
	other := strings.Repeat("AB:", 31) + "AB"
	if _, err := console.Dial(ctx, b.url, other, creds); !errors.Is(err, certs.ErrFingerprintMismatch) {
		t.Errorf("pinned to another certificate: %v", err)
	}
	if _, err := console.Dial(ctx, b.url, "", creds); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("self-signed certificate without a pin: %v", err)
	}
	if _, err := console.Dial(ctx, "ftp://x", "", creds); err == nil {
		t.Error("ftp URL accepted")
	}
	r, err := console.Dial(ctx, b.url, b.fingerprint, creds)
	if err != nil {
		t.Fatalf("viewer: %v", err)
	}
	defer r.Close()
	if _, err := r.Send(ctx, organism.Message{Target: "greeter", Text: "x"}); err == nil || err.Error() != "Forbidden: role viewer cannot send" {
		t.Errorf("viewer send: %v", err)
	}
}

// TestRemoteLoginLockout: a locked-out login says when to try again (the
// bus's Retry-After) and reads once, for `xmlpipe console: ` to prefix —
// not "console: login failed: Too many failed login attempts".
func TestRemoteLoginLockout(t *testing.T) {
	b := startBus(t)
	secret := b.user(t, "rex", auth.Viewer)
	ctx := context.Background()
	creds := auth.Credentials{Username: "rex", Password: "wrong password", TOTP: b.code(t, secret)}
	var err error
	for range auth.DefaultMaxFailures + 1 {
		if _, err = console.Dial(ctx, b.url, b.fingerprint, creds); !errors.Is(err, console.ErrLogin) {
			t.Fatalf("wrong password: %v", err)
		}
	}
	want := regexp.MustCompile(`^login failed: Too many failed login attempts; try again in [0-9ms]+s$`)
	if !want.MatchString(err.Error()) {
		t.Errorf("locked out: %q, want it to match %s", err, want)
	}
	var le *client.LoginError
	if !errors.As(err, &le) || le.RetryAfter <= 0 || le.RetryAfter > time.Minute {
		t.Errorf("locked out: %#v, want a *client.LoginError with the lockout's wait", err)
	}
}
