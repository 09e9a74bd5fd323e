package bus

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
)

// TestDashboardShowsWhyRefused: the dashboard's conversation view says why
// a message was refused — the diagnostics the journal recorded — and shows
// no empty payload type ("<>") for a message refused before its payload
// was known.
func TestDashboardShowsWhyRefused(t *testing.T) {
	f := newFixture(t)
	ctx := browser(t)
	token := f.loginAs("bo", auth.Operator)
	c := f.dial("/bus", token)
	sendRaw(t, c, "<not xml")
	huh, raw := readEnvelope(t, c)
	if huh.Payload.XMLName.Local != "huh" {
		t.Fatalf("want a <huh>, got %s", raw)
	}
	f.waitJournal()

	secret := f.user("ada", auth.Admin)
	item := css(`#feed li[data-conversation="` + huh.Thread + `"]`)
	refusal := css(`#envelopes li[data-kind="huh"]`)
	run(t, ctx, "open the refused message's conversation", chromedp.Steps(
		f.loginSteps("ada", secret),
		chromedp.WaitVisible(item),
		chromedp.Click(item),
		chromedp.WaitVisible(refusal),
	))
	text := textOf(t, ctx, "the refusal", refusal)
	if !strings.Contains(text, "No matching global declaration") {
		t.Errorf("the refusal does not say why:\n%s", text)
	}
	if strings.Contains(text, "<>") {
		t.Errorf("the refusal shows an empty payload type:\n%s", text)
	}
}
