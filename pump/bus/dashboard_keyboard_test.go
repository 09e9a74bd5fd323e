package bus

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
)

// TestDashboardOpensAConversationByKeyboard: an operator without a mouse
// reaches the conversation list with Tab from the send box's buttons and
// opens one with Enter; the list, drawn anew as new conversations come
// in, keeps the focus on the conversation it was on, so Tab goes on from
// there instead of from the top of the page.
func TestDashboardOpensAConversationByKeyboard(t *testing.T) {
	f := newFixture(t)
	ctx := browser(t)
	ada := f.loginAs("ada", auth.Admin)
	conv := f.inject(ada, "greeter", map[string]string{"name": "Kim"})
	secret := f.user("olga", auth.Operator)
	row := `#feed li[data-conversation="` + conv + `"]`
	run(t, ctx, "login, tab to the list", chromedp.Steps(
		f.loginSteps("olga", secret),
		chromedp.WaitVisible(css(row)),
		chromedp.Focus(css("#new-button")),
		chromedp.KeyEvent(kb.Tab),
	))
	focused := `(document.activeElement.closest("#feed li") || {dataset: {}}).dataset.conversation || ""`
	if got := run(t, ctx, "focus after Tab", chromedp.Evaluate[string](focused)); got != conv {
		where := run(t, ctx, "focus", chromedp.Evaluate[string](`document.activeElement.tagName + "#" + document.activeElement.id`))
		t.Fatalf("Tab from New reaches %s, want the conversation list's %s", where, conv)
	}
	run(t, ctx, "Enter opens it", chromedp.KeyEvent(kb.Enter))
	waitText(t, ctx, "#thread-id", func(s string) bool { return s == conv })

	other := f.inject(ada, "greeter", map[string]string{"name": "Lee"})
	run(t, ctx, "the list drawn anew", chromedp.WaitVisible(css(`#feed li[data-conversation="`+other+`"]`)))
	if got := run(t, ctx, "focus after the redraw", chromedp.Evaluate[string](focused)); got != conv {
		t.Errorf("after the list was drawn anew the focus is on %q, want still on %s", got, conv)
	}
}
