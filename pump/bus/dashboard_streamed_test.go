package bus

import (
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
)

// TestDashboardDrawsAStreamedAnswerOnce: once the envelope of an agent's
// answer is drawn, the live block that showed the answer streaming goes —
// the text is on the page once — while another agent's stream, and a
// stream not yet ended, stay.
func TestDashboardDrawsAStreamedAnswerOnce(t *testing.T) {
	f := newFixture(t)
	ctx := browser(t)
	secret := f.user("olga", auth.Operator)
	run(t, ctx, "login", chromedp.Steps(f.loginSteps("olga", secret), chromedp.WaitVisible(css("#send-input"))))

	// The page as the stream and the journal drive it: poet's answer and
	// critic's words streamed, then poet's answer journaled. (A conversation
	// id the organism does not know: the page's own reads of it fail and
	// draw nothing.)
	got := run(t, ctx, "streams, then the answer's envelope", chromedp.Evaluate[[]string](`(() => {
  const conv = "00000000-0000-4000-8000-000000000001";
  state.selected = conv; state.openSeq = 0;
  const frame = (f) => streamFrame({ data: JSON.stringify(f) });
  frame({ event: "delta", thread_id: conv, agent: "poet", text: "Rain on tin", end: true });
  frame({ event: "delta", thread_id: conv, agent: "critic", text: "Hmm" });
  drawEnvelopes([{ seq: 1, thread_id: conv, conversation: conv, direction: "outbound", kind: "message",
    from: "poet", to: "app", payload_type: "AgentAnswer",
    payload: "<AgentAnswer><Text>Rain on tin</Text></AgentAnswer>", timestamp: "" }]);
  return [...document.querySelectorAll("#live pre")].map((p) => p.dataset.agent);
})()`))
	if len(got) != 1 || got[0] != "critic" {
		t.Errorf("live blocks %v after poet's answer was drawn: want critic's alone", got)
	}
}
