package bus

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
)

// TestDashboardPollsOneAtATime: when the API answers slower than the
// dashboard's once-a-second poll (a large journal: GET /api/v1/threads
// reads all of it), the page does not start another poll while one is
// under way. It did: on a busy organism one open dashboard had 22 reads
// of the conversation list running at once, each slowing the others.
func TestDashboardPollsOneAtATime(t *testing.T) {
	f := newFixture(t)
	ctx := browser(t)
	secret := f.user("vic", auth.Viewer)
	run(t, ctx, "login", chromedp.Steps(f.loginSteps("vic", secret), chromedp.WaitVisible(css(`#agents tbody tr`))))
	// Every read of the conversation list takes 2.5 s more.
	run(t, ctx, "slow list", chromedp.Evaluate[bool](`(() => {
		const real = window.fetch;
		window.listReads = { started: 0, running: 0, most: 0 };
		window.fetch = async (...args) => {
			if (!String(args[0]).startsWith("/api/v1/threads?")) return real(...args);
			const r = window.listReads;
			r.started++; r.running++; r.most = Math.max(r.most, r.running);
			try {
				await new Promise((done) => setTimeout(done, 2500));
				return await real(...args);
			} finally { r.running--; }
		};
		return true;
	})()`))
	type reads struct{ Started, Running, Most int }
	var got reads
	for deadline := time.Now().Add(stepTimeout); ; {
		got = run(t, ctx, "reads", chromedp.Evaluate[reads](`window.listReads`))
		if got.Started >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the list was read %d times in %s", got.Started, stepTimeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got.Most > 1 {
		t.Errorf("%d reads of the conversation list ran at once (%+v), want one at a time", got.Most, got)
	}
}

// TestDashboardRatePerSecond: the throughput sparkline's figure is
// messages per second however long a poll took: polls wait for the read
// under way (TestDashboardPollsOneAtATime), so on a slow API one comes
// every few seconds, and each poll's difference of the handled counter,
// read as "/s", overstated the rate as many times.
func TestDashboardRatePerSecond(t *testing.T) {
	f := newFixture(t)
	ctx := browser(t)
	secret := f.user("vic", auth.Viewer)
	run(t, ctx, "login", chromedp.Steps(f.loginSteps("vic", secret), chromedp.WaitVisible(css(`#agents tbody tr`))))
	// Two reads of the counter 3 s apart, 30 messages handled between them.
	got := run(t, ctx, "rate", chromedp.Evaluate[string](`(() => {
		clearInterval(state.ticker);
		state.last = null; state.lastAt = null; state.rates = [];
		drawRate(100, 1000);
		drawRate(130, 4000);
		return document.querySelector("#rate").textContent;
	})()`))
	if got != "10 /s" {
		t.Errorf("30 messages in 3 s read %q, want 10 /s", got)
	}
}
