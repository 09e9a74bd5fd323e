package bus

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
)

// TestDashboardShowsTextAsText sends a name that holds markup: the open
// conversation shows its envelopes as the XML they are, the text escaped,
// never as elements that are not there. (A line whose text begins with an
// element, @greeter <Greeting>…, is the payload's XML, as on the console.)
func TestDashboardShowsTextAsText(t *testing.T) {
	f := newFixture(t)
	ctx := browser(t)
	secret := f.user("ada", auth.Operator)
	run(t, ctx, "send", chromedp.Steps(
		f.loginSteps("ada", secret),
		chromedp.SendKeys(css("#send-input"), `@greeter Tom <b>&</b> "Jerry"`),
		chromedp.Click(css("#send-button")),
		chromedp.WaitVisible(css("#send-status[data-thread]")),
		// Greeting, GreetingResponse, ShoutedResponse.
		chromedp.WaitVisible(css("#envelopes li:nth-child(3)")),
	))
	envelopes := textOf(t, ctx, "envelopes", css("#envelopes"))
	for _, want := range []string{
		`<Name>Tom &lt;b&gt;&amp;&lt;/b&gt; "Jerry"</Name>`,
		`<Message>HELLO, TOM &lt;B&gt;&amp;&lt;/B&gt; "JERRY"!</Message>`,
	} {
		if !strings.Contains(envelopes, want) {
			t.Errorf("the envelopes lack %s:\n%s", want, envelopes)
		}
	}
}
