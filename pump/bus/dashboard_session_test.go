package bus

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
)

// TestDashboardWarnsBeforeTheSessionEnds: with sessions of 8 s, the
// dashboard says, some seconds before, that the session is about to end;
// once it has, it returns to the login form saying why instead of letting
// the next click fail — and what the operator had typed in the send box
// is there again when they log back in.
func TestDashboardWarnsBeforeTheSessionEnds(t *testing.T) {
	f := prepareFixture(t)
	svc, err := auth.New(f.org.Store(), auth.Options{Argon2: auth.Argon2Params{Time: 1, MemoryKiB: 64, Threads: 1},
		MaxFailures: 3, Clock: f.clock.Now, SessionTTL: 8 * time.Second, Organism: f.org.Config.Organism.Name, Logger: slog.New(f.logs)})
	if err != nil {
		t.Fatal(err)
	}
	f.auth, f.opts.Auth = svc, svc
	f.start(f.opts)
	ctx := browser(t)
	secret := f.user("olga", auth.Operator)

	// The login answer says how long the session has left.
	if status, body, _ := f.do("POST", "/auth/login", "", map[string]string{"username": "olga", "password": password,
		"totp": f.code(secret)}); status != 200 || body["expires_in"] != 8.0 {
		t.Fatalf("login: %d %v, want expires_in 8", status, body)
	}
	f.nextStep()

	const draft = "@greeter a message not yet sent"
	run(t, ctx, "login, type, the warning", chromedp.Steps(
		f.loginSteps("olga", secret),
		chromedp.SendKeys(css("#send-input"), draft),
		chromedp.WaitVisible(css("#session-notice")),
	))
	if notice := textOf(t, ctx, "notice", css("#session-notice")); !strings.Contains(notice, "expires in") {
		t.Errorf("the notice says %q, want when the session expires", notice)
	}
	run(t, ctx, "the session ends", chromedp.Steps(
		chromedp.WaitVisible(css("#login")),
		chromedp.WaitNotVisible(css("#main")),
	))
	if why := textOf(t, ctx, "why", css("#login-error")); why != "Your session expired: log in again." {
		t.Errorf("the login form says %q, want that the session expired", why)
	}
	if left := run(t, ctx, "what shows", chromedp.Evaluate[string](`document.querySelector("#send-input").value`)); left != "" {
		t.Errorf("the ended session's draft shows behind the login form: %q", left)
	}

	// The server agrees once its clock passes the session's end.
	token := run(t, ctx, "token", chromedp.Evaluate[string](`state.token || ""`))
	if token != "" {
		t.Errorf("the page keeps the ended session's token")
	}
	f.clock.Advance(10 * time.Second)

	// Back in (the user name is still filled in), the draft is there.
	f.nextStep()
	run(t, ctx, "log in again", chromedp.Steps(
		chromedp.SetValue(css("#password"), password),
		chromedp.SetValue(css("#totp"), f.code(secret)),
		chromedp.Click(css("#login-button")),
		chromedp.WaitVisible(css("#main")),
	))
	if got := run(t, ctx, "the draft", chromedp.Evaluate[string](`document.querySelector("#send-input").value`)); got != draft {
		t.Errorf("after logging in again the send box holds %q, want the draft %q", got, draft)
	}
}
