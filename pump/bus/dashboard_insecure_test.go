package bus

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestDashboardInsecureDevNeedsNoLogin: under --insecure-dev the server
// authenticates no one, so the dashboard does not ask for a login it would
// not check: it opens on the organism, says it is in insecure dev mode, and
// works (the graph draws, a message is sent, its sockets are live).
func TestDashboardInsecureDevNeedsNoLogin(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Insecure = true })
	ctx := browser(t)
	run(t, ctx, "open, graph, send", chromedp.Steps(
		chromedp.Navigate(f.base+"/"),
		chromedp.WaitVisible(css("#main")),
		chromedp.WaitVisible(css(`#graph g[data-name="greeter"] circle`)),
		chromedp.SendKeys(css("#send-input"), "@greeter Dan"),
		chromedp.Click(css("#send-form button")),
		chromedp.WaitVisible(css("#send-status[data-thread]")),
	))
	// Its sockets open on its own origin (ws: here) under its CSP; a socket
	// to another host is refused.
	run(t, ctx, "live", chromedp.WaitVisible(css(`#connection[data-state="connected"]`)))
	if got := run(t, ctx, "a socket elsewhere", chromedp.Evaluate[string](`new Promise((done) => {
		document.addEventListener("securitypolicyviolation", (e) => done(e.effectiveDirective), { once: true });
		try { new WebSocket("ws://127.0.0.2:9/").onopen = () => done("opened"); } catch (e) { done("connect-src"); }
	})`, chromedp.EvalAwaitPromise)); got != "connect-src" {
		t.Errorf("a WebSocket to another host: %s, want refused by the CSP's connect-src", got)
	}
	if hidden := run(t, ctx, "login form", chromedp.Evaluate[bool](`document.querySelector("#login").hidden`)); !hidden {
		t.Error("the login form shows under --insecure-dev, where any name logs in")
	}
	if who := textOf(t, ctx, "who", css("#who")); !strings.Contains(who, "insecure dev mode") {
		t.Errorf("#who = %q, want it to say insecure dev mode", who)
	}
}
