package bus

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
)

// stepTimeout bounds one step of a browser test — an action, or a wait for
// what the page shows next (a failsafe: every step waits for an element or
// a condition, never for a fixed time). Each step has its own, so a loaded
// machine that slows every step down does not exhaust one budget for the
// whole test.
const stepTimeout = 60 * time.Second

// screenshotDir is where the dashboard test saves its screenshot (the
// repository's build folder, ignored by git).
const screenshotDir = "../../build"

// browser starts a headless Chromium for one test, or skips the test with
// the reason when no Chromium is installed (make test-deps installs Debian's
// chromium package).
func browser(t *testing.T) context.Context {
	t.Helper()
	path := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		t.Skip("no Chromium on this machine: `make test` (test-deps) installs Debian's chromium package")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.Flag("ignore-certificate-errors", true), chromedp.WindowSize(1400, 900))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelBrowser()
		cancelAlloc()
	})
	// The first Run starts the browser with ctx's lifetime; each step runs
	// under a timeout of its own derived from it (run).
	if _, err := chromedp.Run(ctx, chromedp.Steps()); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	return ctx
}

// css is a CSS selector (DOM.querySelector).
type css = chromedp.CSS

// loginSteps fill in the dashboard's login form as name with a fresh TOTP
// code and wait for the main view.
func (f *fixture) loginSteps(name, secret string) chromedp.Action[chromedp.Void] {
	f.nextStep()
	return chromedp.Steps(
		chromedp.Navigate(f.base+"/"),
		chromedp.WaitVisible(css("#login")),
		chromedp.SendKeys(css("#username"), name),
		chromedp.SendKeys(css("#password"), password),
		chromedp.SendKeys(css("#totp"), f.code(secret)),
		chromedp.Click(css("#login-button")),
		chromedp.WaitVisible(css("#main")),
	)
}

// run runs a browser action that yields a value within stepTimeout,
// failing the test on error.
func run[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	// The first run in a tab opens it for ctx's lifetime, not the step's.
	if c := chromedp.FromContext(ctx); c != nil && c.Target == nil {
		if _, err := chromedp.Run(ctx, chromedp.Steps()); err != nil {
			t.Fatalf("%s: open the tab: %v", what, err)
		}
	}
	sctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(sctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

func TestDashboardInABrowser(t *testing.T) {
	f, m := newMetricsFixture(t)
	ctx := browser(t)
	// Handler timings of 3 ms keep coming, as a busy organism's would: the
	// latency sparkline shows their mean.
	feed := time.NewTicker(50 * time.Millisecond)
	defer feed.Stop()
	stopFeed := make(chan struct{})
	defer close(stopFeed)
	go func() {
		for {
			select {
			case <-feed.C:
				m.ObserveStage(pump.StageSample{Stage: pump.StageHandler, Listener: "greeter", Duration: 3 * time.Millisecond})
			case <-stopFeed:
				return
			}
		}
	}()
	adminSecret := f.user("ada", auth.Admin)

	run(t, ctx, "admin login, graph, send", chromedp.Steps(
		f.loginSteps("ada", adminSecret),
		// The three hello-world listeners are drawn.
		chromedp.WaitVisible(css(`#graph g[data-name="greeter"] circle`)),
		chromedp.WaitVisible(css(`#graph g[data-name="shouter"] circle`)),
		chromedp.WaitVisible(css(`#graph g[data-name="response-handler"] circle`)),
		// Send @greeter Dan.
		chromedp.SendKeys(css("#send-input"), "@greeter Dan"),
		chromedp.Click(css("#send-form button")),
		chromedp.WaitVisible(css("#send-status[data-thread]")),
	))
	sent := run(t, ctx, "sent thread", chromedp.AttributeValue(css("#send-status"), "data-thread")).Value
	if sent == "" {
		t.Fatal("no thread id after sending")
	}
	// The conversation appears in the feed; open its envelopes.
	conv := css(`#feed li[data-conversation="` + sent + `"]`)
	run(t, ctx, "open the conversation", chromedp.Steps(
		chromedp.WaitVisible(conv),
		chromedp.Click(conv),
		// Greeting, GreetingResponse, ShoutedResponse.
		chromedp.WaitVisible(css("#envelopes li:nth-child(3)")),
	))
	run(t, ctx, "latency sparkline", chromedp.WaitVisible(css("#latency-box")))
	for deadline := time.Now().Add(stepTimeout); ; {
		if ms := textOf(t, ctx, "latency", css("#latency-ms")); ms == "3.0 ms" {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("latency shows %q, want the 3 ms handler timings' mean", ms)
		}
		time.Sleep(100 * time.Millisecond)
	}
	envelopes := textOf(t, ctx, "envelopes", css("#envelopes"))
	kinds := run(t, ctx, "kinds", chromedp.Evaluate[string](
		`Array.from(document.querySelectorAll("#envelopes li")).map(li => li.dataset.kind).join(",")`))
	run(t, ctx, "context", chromedp.WaitVisible(css("#context tr[data-segment]")))
	checkContextFits(t, ctx)
	png := run(t, ctx, "screenshot", chromedp.FullScreenshot(100))
	for _, want := range []string{"<Greeting>", "<Name>Dan</Name>", "<GreetingResponse>", "Hello, Dan!", "<ShoutedResponse>"} {
		if !strings.Contains(envelopes, want) {
			t.Errorf("the conversation's envelopes lack %q:\n%s", want, envelopes)
		}
	}
	if i, j := strings.Index(envelopes, "<Greeting>"), strings.Index(envelopes, "<ShoutedResponse>"); i < 0 || j < i {
		t.Errorf("envelopes out of order:\n%s", envelopes)
	}
	if strings.Contains(kinds, "huh") {
		t.Errorf("a greeting has a failure: kinds %s", kinds)
	}
	if err := os.MkdirAll(screenshotDir, 0o755); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(screenshotDir, "dashboard.png")
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", shot)

	// An admin pauses greeter and resumes it; the graph follows.
	run(t, ctx, "pause and resume", chromedp.Steps(
		chromedp.Click(css(`#agents button[data-agent="greeter"]`)),
		chromedp.WaitVisible(css(`#graph g[data-name="greeter"][data-state="paused"] circle`)),
		chromedp.Click(css(`#agents button[data-agent="greeter"]`)),
		chromedp.WaitVisible(css(`#graph g[data-name="greeter"][data-state="idle"] circle`)),
	))
	for _, l := range f.org.Pump.Listeners() {
		if l.Name == "greeter" && l.Paused {
			t.Error("greeter still paused after resume")
		}
	}

	// A viewer, in a tab of its own, sees the organism but no send box.
	viewerSecret := f.user("vic", auth.Viewer)
	vctx, cancel := chromedp.NewContext(ctx)
	defer cancel()
	run(t, vctx, "viewer login", chromedp.Steps(
		f.loginSteps("vic", viewerSecret),
		chromedp.WaitVisible(css(`#graph g[data-name="greeter"] circle`)),
		chromedp.WaitVisible(css("#send-refused")),
	))
	if hidden := run(t, vctx, "send box", chromedp.Evaluate[bool](`document.querySelector("#send-form").hidden`)); !hidden {
		t.Error("a viewer was offered the send box")
	}
}

func TestDashboardAssets(t *testing.T) {
	f := newFixture(t)
	c := f.client()
	defer c.CloseIdleConnections()
	for _, tc := range []struct {
		path, wantType string
		want           int
	}{
		{"/", "text/html", http.StatusOK},
		{"/ui/app.js", "text/javascript", http.StatusOK},
		{"/ui/style.css", "text/css", http.StatusOK},
		{"/ui/missing.js", "", http.StatusNotFound},
		{"/ui/sub/app.js", "", http.StatusNotFound},
		{"/ui/", "", http.StatusNotFound},
	} {
		resp, err := c.Get(f.base + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("GET %s: %d, want %d", tc.path, resp.StatusCode, tc.want)
			continue
		}
		if tc.want == http.StatusOK {
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, tc.wantType) {
				t.Errorf("GET %s: Content-Type %q, want %s", tc.path, ct, tc.wantType)
			}
			if got := cspDirective(resp.Header.Get("Content-Security-Policy"), "connect-src"); got != "'self'" {
				t.Errorf("GET %s: connect-src %q, want 'self' only (no WebSocket to another host)", tc.path, got)
			}
		}
	}
}

// TestDashboardDrawsGateways: organism B's gateway a (configured, its peer
// never connecting) is drawn as a disconnected gateway node, labelled with
// what it exports.
func TestDashboardDrawsGateways(t *testing.T) {
	f := newFixtureWith(t, federatedB(t))
	ctx := browser(t)
	secret := f.user("vic", auth.Viewer)
	node := `#graph g.gateway[data-name="a"][data-connected="false"]`
	run(t, ctx, "viewer login, gateway node", chromedp.Steps(
		f.loginSteps("vic", secret),
		chromedp.WaitVisible(css(node+` polygon.gw-down`)),
		chromedp.WaitVisible(css(`#graph g[data-name="greeter"] circle`)),
	))
	if got := run(t, ctx, "exports label", chromedp.Evaluate[string](
		`document.querySelector('`+node+` text.exports').textContent`)); got != "exports Greeting" {
		t.Errorf("exports label %q, want %q", got, "exports Greeting")
	}
}

// cspDirective is the value of directive in the Content-Security-Policy
// csp ("" when absent).
func cspDirective(csp, directive string) string {
	for _, d := range strings.Split(csp, ";") {
		name, value, _ := strings.Cut(strings.TrimSpace(d), " ")
		if name == directive {
			return strings.TrimSpace(value)
		}
	}
	return ""
}
