package bus

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// TestDashboardDrawsAPrunedDenialAsADecision: once retention pruned a
// denial's refusal, its payload — and with it the outcome the API reads
// from it — is gone; the dashboard still draws it as a decision (amber),
// from what the journal kept of it (its kind), and says it was pruned,
// never as a failure (red).
func TestDashboardDrawsAPrunedDenialAsADecision(t *testing.T) {
	m := newLoopModel(t, "<RunCommand><Command>rm -rf /tmp/x</Command></RunCommand>", "I could not.")
	// What reaches the researcher — its task, the refusal — is pruned at
	// once; the conversation's answer is kept, so the conversation is listed.
	yaml := strings.Replace(governedYAML, "    approval: [run_command]\n",
		"    approval: [run_command]\n    retention: window(1ms)\n", 1)
	f := newFixtureWith(t, governedOrganismFrom(t, m, yaml))
	ctx := browser(t)
	secret := f.user("ada", auth.Admin)
	ws := f.dial("/ws", f.login("ada", secret))
	readUntil(t, ws, "connected")
	conv := sendOver(t, ws, "researcher", "clean up")
	readUntil(t, ws, "complete")
	f.waitJournal()
	if n, err := f.org.Store().Sweep(context.Background(), organism.RetentionPolicy(f.org.CurrentConfig())); err != nil || n == 0 {
		t.Fatalf("sweep: %d pruned, %v", n, err)
	}
	status, body, _ := f.do("GET", "/api/v1/threads/"+conv+"/messages?scope=conversation", f.login("ada", secret), nil)
	if status != http.StatusOK {
		t.Fatalf("messages: %d %v", status, body)
	}
	pruned := false
	for _, v := range body["messages"].([]any) {
		msg := v.(map[string]any)
		pruned = pruned || msg["kind"] == "refusal" && msg["pruned"] != nil && msg["payload"] == ""
	}
	if !pruned {
		t.Fatalf("no pruned refusal among the conversation's messages: %v", body)
	}

	item := css(`#feed li[data-conversation="` + conv + `"]`)
	refusal := css(`#envelopes li[data-kind="refusal"]`)
	run(t, ctx, "open the conversation of the pruned denial", chromedp.Steps(
		f.loginSteps("ada", secret),
		chromedp.WaitVisible(item),
		chromedp.Click(item),
		chromedp.WaitVisible(refusal),
	))
	class := run(t, ctx, "the pruned refusal's class", chromedp.AttributeValue(refusal, "class")).Value
	if !strings.Contains(class, "decision") || strings.Contains(class, "failure") {
		t.Errorf("the pruned refusal is drawn %q, want a decision, not a failure", class)
	}
	if text := textOf(t, ctx, "the pruned refusal", refusal); !strings.Contains(text, "pruned") {
		t.Errorf("the pruned refusal does not say it was pruned:\n%s", text)
	}
}
