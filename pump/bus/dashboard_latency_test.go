package bus

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
)

// TestDashboardLatencyWhenIdle: a second in which no handler ran has no
// mean handler time: the latency reads "—", not "0.000 ms", which told an
// operator of an idle organism that its handlers took no time at all.
func TestDashboardLatencyWhenIdle(t *testing.T) {
	f, _ := newMetricsFixture(t)
	ctx := browser(t)
	secret := f.user("vic", auth.Viewer)
	run(t, ctx, "login", chromedp.Steps(f.loginSteps("vic", secret), chromedp.WaitVisible(css("#latency-box"))))
	for deadline := time.Now().Add(stepTimeout); ; {
		if n := run(t, ctx, "latency samples", chromedp.Evaluate[int](`state.lats.length`)); n >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no latency sample drawn")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got := textOf(t, ctx, "latency", css("#latency-ms")); got != "—" {
		t.Errorf("an idle organism's latency reads %q, want —", got)
	}
}
