package bus

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
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
// it: a greeting sent waits for approval; the operator may cancel or kill
// the conversation it began (the README: operators kill their own) while
// a viewer sees no button to act with; the open conversation shows the
// hold and its approval as they happen (not only once it completes), as
// decisions, not failures; the kill ends it; Log out returns
// to the login form and the session's token is revoked. The login form
// keeps no password once it has served.
func TestDashboardOperatorWalk(t *testing.T) {
	f := newFixtureWith(t, heldHello(t))
	ctx := browser(t)
	secret := f.user("olga", auth.Operator)

	run(t, ctx, "operator login", f.loginSteps("olga", secret))
	// The hidden login form keeps no credential once it has served: the
	// next person at the machine finds neither password nor code in it.
	if left := run(t, ctx, "the login form's fields", chromedp.Evaluate[string](
		`["#password", "#totp"].map((s) => document.querySelector(s).value).join("")`)); left != "" {
		t.Errorf("after logging in the hidden form still holds %q", left)
	}
	run(t, ctx, "send", chromedp.Steps(
		chromedp.SendKeys(css("#send-input"), "@greeter Dan"),
		chromedp.Click(css("#send-button")),
		chromedp.WaitVisible(css("#send-status[data-thread]")),
	))
	run(t, ctx, "the approval", chromedp.WaitVisible(css("#approvals li button[data-decision=approve]")))
	conv := run(t, ctx, "sent thread", chromedp.AttributeValue(css("#send-status"), "data-thread")).Value
	row := `#feed li[data-conversation="` + conv + `"]`

	// Its row tells it from the others between the same participants: its
	// id's first characters and when it began.
	text := textOf(t, ctx, "the conversation's row", css(row))
	if !strings.Contains(text, conv[:8]) || !regexp.MustCompile(`\d\d:\d\d:\d\d`).MatchString(text) {
		t.Errorf("the row %q names neither the conversation (%s) nor when it began", text, conv[:8])
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

	// Someone else approves the call while shouter is paused: the
	// conversation goes on (still active, nothing completes) and the open
	// conversation shows the hold and the approval as they are journaled.
	ada := f.loginAs("ada", auth.Admin)
	if status, body, _ := f.do("POST", "/api/v1/agents/shouter/pause", ada, nil); status != http.StatusOK {
		t.Fatalf("pause shouter: %d %v", status, body)
	}
	id := run(t, ctx, "approval id", chromedp.AttributeValue(css("#approvals li"), "data-approval")).Value
	if status, body, _ := f.do("POST", "/api/v1/approvals/"+id, ada, map[string]string{"decision": "approve"}); status != http.StatusOK {
		t.Fatalf("approve: %d %v", status, body)
	}
	for deadline := time.Now().Add(stepTimeout); ; {
		n := run(t, ctx, "decisions shown", chromedp.Evaluate[int](
			`document.querySelectorAll('#envelopes li[data-kind="decision"]').length`))
		if n >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the open conversation shows %d decisions, want the hold and the approval", n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// A hold and an approval are the governance at work, not errors.
	if classes := run(t, ctx, "decision classes", chromedp.Evaluate[string](
		`Array.from(document.querySelectorAll('#envelopes li[data-kind="decision"]')).map((li) => li.className).join(" | ")`)); strings.Contains(classes, "failure") {
		t.Errorf("decisions read as failures: %s", classes)
	}

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
	// The page keeps nothing of the session behind the form: the next
	// user at the machine neither sees its conversation nor continues it.
	if left := run(t, ctx, "what the page keeps", chromedp.Evaluate[string](
		`[state.selected || "", ...["#feed", "#approvals", "#envelopes", "#calls tbody", "#live", "#thread-id"].map((s) => document.querySelector(s).textContent)].join("")`)); left != "" {
		t.Errorf("after logging out the page still holds %q", left)
	}
	if got := textOf(t, ctx, "login message", css("#login-error")); got != "Logged out." {
		t.Errorf("after logging out the form says %q, want %q", got, "Logged out.")
	}
	for deadline := time.Now().Add(stepTimeout); ; {
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

// TestDashboardFitsAPhone: at 400 px, one panel under another, no panel
// is wider than it shows either — the model calls table's header ran
// past the conversation panel's edge.
func TestDashboardFitsAPhone(t *testing.T) {
	f := newFixture(t)
	ctx := browser(t)
	secret := f.user("olga", auth.Operator)
	run(t, ctx, "phone-wide operator", chromedp.Steps(
		chromedp.EmulateViewport(400, 800),
		f.loginSteps("olga", secret),
		chromedp.WaitVisible(css(`#agents tbody tr`)),
	))
	clipped := run(t, ctx, "clipped panels", chromedp.Evaluate[[]string](
		`Array.from(document.querySelectorAll("main > section")).filter((s) => s.scrollWidth > s.clientWidth + 1).map((s) => s.id + " " + s.scrollWidth + ">" + s.clientWidth)`))
	if len(clipped) > 0 {
		t.Errorf("at 400 px these panels are wider than they show: %v", clipped)
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
	for deadline := time.Now().Add(stepTimeout); ; {
		if msg := textOf(t, ctx, "login error", css("#login-error")); msg != "" {
			return msg
		}
		if time.Now().After(deadline) {
			t.Fatal("the login form never answered")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
