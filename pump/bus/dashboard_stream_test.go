package bus

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/xml-pipeline/xmlpipe/listeners/llm/llmtest"
	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
)

// TestDashboardStreamsAndCalls: in a browser, an operator's message to an
// agent shows the agent's text while the model is still writing it, then
// the conversation's model call in the per-call table; the send box
// continues the open conversation until New begins another.
func TestDashboardStreamsAndCalls(t *testing.T) {
	m := llmtest.NewChatModel(t, func(n int) []string { return []string{"Rain on tin", " roofs, answer " + string(rune('1'+n))} })
	m.Hold = make(chan struct{})
	f := newFixtureWith(t, agentOrganism(m.URL))
	ctx := browser(t)
	secret := f.user("olga", auth.Operator)

	run(t, ctx, "login, send", chromedp.Steps(
		f.loginSteps("olga", secret),
		chromedp.WaitVisible(css("#send-input")),
		chromedp.SendKeys(css("#send-input"), "@poet rain"),
		chromedp.Click(css("#send-button")),
		chromedp.WaitVisible(css("#send-status[data-thread]")),
	))
	conv := run(t, ctx, "sent thread", chromedp.AttributeValue(css("#send-status"), "data-thread")).Value
	<-m.First
	live := css(`#live pre[data-agent="poet"]`)
	run(t, ctx, "live text", chromedp.WaitVisible(live))
	waitText(t, ctx, "#live", func(s string) bool { return s == "[poet] Rain on tin" })
	shot := run(t, ctx, "screenshot", chromedp.FullScreenshot(100))
	if err := os.MkdirAll(screenshotDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(screenshotDir, "dashboard-stream.png"), shot, 0o644); err != nil {
		t.Fatal(err)
	}
	close(m.Hold)

	// The answer is journaled; the call is listed, linked to it.
	run(t, ctx, "calls", chromedp.WaitVisible(css("#calls tbody tr")))
	// The table is drawn again whenever the conversation has news, so the
	// row is read whole in one evaluation, not found and then read (a row
	// replaced in between reads empty).
	waitText(t, ctx, "#calls tbody tr", func(row string) bool {
		for _, want := range []string{"#", "poet", "local/test-model", "11 + 7", "stop"} {
			if !strings.Contains(row, want) {
				return false
			}
		}
		return true
	})
	waitText(t, ctx, "#envelopes", func(s string) bool { return strings.Contains(s, "Rain on tin roofs, answer 1") })
	if got := textOf(t, ctx, "send target", css("#send-target")); got != "continues "+conv[:8] {
		t.Errorf("send target %q", got)
	}

	// The next message continues the conversation; New begins another.
	run(t, ctx, "continue", chromedp.Steps(
		chromedp.WaitVisible(css(`#send-input`)),
		chromedp.SendKeys(css("#send-input"), "@poet again"),
		chromedp.Click(css("#send-button")),
	))
	waitText(t, ctx, "#envelopes", func(s string) bool { return strings.Contains(s, "answer 2") })
	if again := run(t, ctx, "thread", chromedp.AttributeValue(css("#send-status"), "data-thread")).Value; again != conv {
		t.Errorf("the second message travelled on %s, want the open conversation %s", again, conv)
	}
	if msgs := m.Request(t, 1); !llmtest.Has(msgs, "assistant", "answer 1") {
		t.Errorf("the continued request lacks the first answer: %+v", msgs)
	}
	run(t, ctx, "new", chromedp.Steps(
		chromedp.Click(css("#new-button")),
		chromedp.SendKeys(css("#send-input"), "@poet fresh"),
		chromedp.Click(css("#send-button")),
	))
	waitText(t, ctx, "#envelopes", func(s string) bool { return strings.Contains(s, "answer 3") })
	if fresh := run(t, ctx, "thread", chromedp.AttributeValue(css("#send-status"), "data-thread")).Value; fresh == conv {
		t.Error("after New the message continued the old conversation")
	}
	if msgs := m.Request(t, 2); llmtest.Has(msgs, "assistant", "answer") {
		t.Errorf("the new conversation's request carries an old answer: %+v", msgs)
	}
}

// waitText waits until the text of the element sel satisfies ok.
func waitText(t *testing.T, ctx context.Context, sel string, ok func(string) bool) {
	t.Helper()
	deadline := time.Now().Add(stepTimeout)
	for {
		got := run(t, ctx, sel, chromedp.Evaluate[string](`(document.querySelector(`+"`"+sel+"`"+`) || {}).textContent || ""`))
		if ok(got) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s shows %q", sel, got)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
