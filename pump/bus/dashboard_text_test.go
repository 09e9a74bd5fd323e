package bus

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// textOf returns the visible text (innerText, as chromedp.Text reads it)
// of the first element matching sel, once one exists, read in a single
// evaluation. chromedp.Text finds the node, then reads it by its node id
// in a second call: when the dashboard redraws the element in between (a
// table body or a list rebuilt by the next event), the read fails with
// "No node with given id found" — a flake on a loaded machine, not a
// defect of the page.
func textOf[S ~string](t *testing.T, ctx context.Context, what string, sel S) string {
	t.Helper()
	q, err := json.Marshal(string(sel))
	if err != nil {
		t.Fatal(err)
	}
	js := `(() => { const e = document.querySelector(` + string(q) + `); if (e === null) return null; ` +
		`return e.offsetWidth || e.offsetHeight || e.getClientRects().length ? e.innerText : ""; })()`
	deadline := time.Now().Add(stepTimeout)
	for {
		got := run(t, ctx, what, chromedp.Evaluate[*string](js))
		if got != nil {
			return *got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no element matches %s", what, sel)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
