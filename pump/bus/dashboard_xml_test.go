package bus

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
)

// TestDashboardShowsTextAsText sends a name that looks like markup: the
// open conversation shows its envelopes as the XML they are, the text
// escaped, never as elements that are not there.
func TestDashboardShowsTextAsText(t *testing.T) {
	f := newFixture(t)
	ctx := browser(t)
	secret := f.user("ada", auth.Operator)
	run(t, ctx, "send", chromedp.Steps(
		f.loginSteps("ada", secret),
		chromedp.SendKeys(css("#send-input"), `@greeter <b>Tom</b> & "Jerry"`),
		chromedp.Click(css("#send-button")),
		chromedp.WaitVisible(css("#send-status[data-thread]")),
		// Greeting, GreetingResponse, ShoutedResponse.
		chromedp.WaitVisible(css("#envelopes li:nth-child(3)")),
	))
	envelopes := run(t, ctx, "envelopes", chromedp.Text(css("#envelopes")))
	for _, want := range []string{
		`<Name>&lt;b&gt;Tom&lt;/b&gt; &amp; "Jerry"</Name>`,
		`<Message>HELLO, &lt;B&gt;TOM&lt;/B&gt; &amp; "JERRY"!</Message>`,
	} {
		if !strings.Contains(envelopes, want) {
			t.Errorf("the envelopes lack %s:\n%s", want, envelopes)
		}
	}
}
