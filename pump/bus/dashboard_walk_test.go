package bus

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// heldHelloYAML is the hello-world organism with greeter's calls to
// shouter waiting for a human: a conversation stays active, with a
// pending approval, until someone decides it.
const heldHelloYAML = `
organism: {name: held-hello}
listeners:
  - name: greeter
    payload_class: handlers.hello.Greeting
    handler: handlers.hello.handle_greeting
    description: Greets
    agent: true
    peers: [shouter]
    approval: [shouter]
  - name: shouter
    payload_class: handlers.hello.GreetingResponse
    handler: handlers.hello.handle_shout
    description: Shouts
    agent: true
    peers: [response-handler]
  - name: response-handler
    payload_class: handlers.hello.ShoutedResponse
    handler: handlers.hello.handle_response_print
    description: Prints
`

// heldHello builds heldHelloYAML's organism.
func heldHello(t *testing.T) buildFunc {
	path := filepath.Join(t.TempDir(), "organism.yaml")
	if err := os.WriteFile(path, []byte(heldHelloYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	return func(o organism.Options) (*organism.Organism, error) { return organism.Load(path, o) }
}

// TestDashboardOperatorWalk is an operator's session as one would click
// it: a greeting sent waits for approval; the held call reads as a
// decision, not a failure; the operator may cancel or kill the
// conversation it began (the README: operators kill their own) while a
// viewer sees no button to act with; the kill ends it; Log out returns
// to the login form and the session's token is revoked.
func TestDashboardOperatorWalk(t *testing.T) {
	f := newFixtureWith(t, heldHello(t))
	ctx := browser(t)
	secret := f.user("olga", auth.Operator)

	run(t, ctx, "operator login", f.loginSteps("olga", secret))
	run(t, ctx, "send", chromedp.Steps(
		chromedp.SendKeys(css("#send-input"), "@greeter Dan"),
		chromedp.Click(css("#send-button")),
		chromedp.WaitVisible(css("#send-status[data-thread]")),
	))
	run(t, ctx, "the approval", chromedp.WaitVisible(css("#approvals li button[data-decision=approve]")))
	run(t, ctx, "the held envelope", chromedp.WaitVisible(css(`#envelopes li[data-kind="decision"]`)))
	conv := run(t, ctx, "sent thread", chromedp.AttributeValue(css("#send-status"), "data-thread")).Value
	row := `#feed li[data-conversation="` + conv + `"]`

	// The hold is the approval at work, not an error.
	if cls := run(t, ctx, "held envelope", chromedp.AttributeValue(css(`#envelopes li[data-kind="decision"]`), "class")).Value; strings.Contains(cls, "failure") {
		t.Errorf("the held call reads as a failure: class %q", cls)
	}

	// The operator began it: cancel and kill are offered.
	for _, stop := range []string{"cancel", "kill"} {
		run(t, ctx, "the operator's "+stop+" button", chromedp.WaitVisible(css(row+` button[data-stop="`+stop+`"]`)))
	}

	// A viewer, in a tab of its own, sees the conversation and the
	// approval but no button to act on either.
	vsecret := f.user("vic", auth.Viewer)
	vctx, cancel := chromedp.NewContext(ctx)
	defer cancel()
	run(t, vctx, "viewer login", chromedp.Steps(
		f.loginSteps("vic", vsecret),
		chromedp.WaitVisible(css(row)),
		chromedp.WaitVisible(css("#approvals li")),
	))
	if n := run(t, vctx, "viewer's buttons", chromedp.Evaluate[int](
		`document.querySelectorAll("#feed button, #approvals button, #agents button").length`)); n != 0 {
		t.Errorf("a viewer is offered %d buttons to act with", n)
	}
	cancel()

	// Kill: the conversation reads killed, its approval is gone.
	run(t, ctx, "kill", chromedp.Steps(
		chromedp.Click(css(row+` button[data-stop="kill"]`)),
		chromedp.WaitVisible(css(row+` .status-killed`)),
		chromedp.WaitNotPresent(css("#approvals li")),
	))
	if n := run(t, ctx, "buttons of the killed conversation", chromedp.Evaluate[int](
		`document.querySelectorAll('`+row+` button').length`)); n != 0 {
		t.Errorf("the killed conversation still offers %d buttons", n)
	}

	// Log out: the login form again, and the token no longer works.
	token := run(t, ctx, "token", chromedp.Evaluate[string](`state.token`))
	run(t, ctx, "log out", chromedp.Steps(
		chromedp.Click(css("#logout-button")),
		chromedp.WaitVisible(css("#login")),
		chromedp.WaitNotVisible(css("#main")),
	))
	if got := run(t, ctx, "login message", chromedp.Text(css("#login-error"))); got != "Logged out." {
		t.Errorf("after logging out the form says %q, want %q", got, "Logged out.")
	}
	for deadline := time.Now().Add(browserTimeout); ; {
		status, _, _ := f.do("GET", "/api/v1/agents", token, nil)
		if status == http.StatusUnauthorized {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the logged-out token still answers %d", status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestDashboardFitsANarrowWindow: at 800 px no panel is cut off — the
// listener table's last column and the model calls' outcome are on the
// page, not beyond a panel's edge.
func TestDashboardFitsANarrowWindow(t *testing.T) {
	f := newFixture(t)
	ctx := browser(t)
	secret := f.user("vic", auth.Viewer)
	run(t, ctx, "narrow viewer", chromedp.Steps(
		chromedp.EmulateViewport(800, 900),
		f.loginSteps("vic", secret),
		chromedp.WaitVisible(css(`#agents tbody tr`)),
	))
	clipped := run(t, ctx, "clipped panels", chromedp.Evaluate[[]string](
		`Array.from(document.querySelectorAll("main > section")).filter((s) => s.scrollWidth > s.clientWidth + 1).map((s) => s.id)`))
	if len(clipped) > 0 {
		png := run(t, ctx, "screenshot", chromedp.FullScreenshot(100))
		if err := os.MkdirAll(screenshotDir, 0o755); err == nil {
			_ = os.WriteFile(filepath.Join(screenshotDir, "dashboard-800.png"), png, 0o644)
		}
		t.Errorf("at 800 px these panels are wider than they show: %v", clipped)
	}
}

// TestDashboardLockoutSaysWhen: after too many wrong TOTP codes the
// login form says how long to wait (the 429's Retry-After), not only
// that there were too many.
func TestDashboardLockoutSaysWhen(t *testing.T) {
	f := newFixture(t)
	ctx := browser(t)
	f.user("olga", auth.Operator)
	run(t, ctx, "login form", chromedp.Steps(
		chromedp.Navigate(f.base+"/"),
		chromedp.WaitVisible(css("#login")),
		chromedp.SetValue(css("#username"), "olga"),
		chromedp.SetValue(css("#password"), password),
	))
	for i := 0; ; i++ {
		if i == 20 {
			t.Fatal("20 wrong codes and no lockout")
		}
		run(t, ctx, "wrong code", chromedp.Steps(
			chromedp.SetValue(css("#totp"), "000000"),
			chromedp.SetJavascriptAttribute(css("#login-error"), "textContent", ""),
			chromedp.Click(css("#login-button")),
		))
		msg := loginError(t, ctx)
		if msg == "Invalid credentials" {
			continue
		}
		if !strings.HasPrefix(msg, "Too many failed login attempts") || !strings.Contains(msg, "try again in") {
			t.Fatalf("locked out, the form says %q, want how long to wait", msg)
		}
		break
	}
}

// loginError waits for the login form's answer to the attempt just
// submitted (the form clears it on submit) and returns it.
func loginError(t *testing.T, ctx context.Context) string {
	t.Helper()
	for deadline := time.Now().Add(browserTimeout); ; {
		if msg := run(t, ctx, "login error", chromedp.Text(css("#login-error"))); msg != "" {
			return msg
		}
		if time.Now().After(deadline) {
			t.Fatal("the login form never answered")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
