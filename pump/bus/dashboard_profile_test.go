package bus

import (
	"context"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
)

// TestDashboardAgentsForAProfile: /api/v1/agents leaves a listener's
// queue depth and handled count out for a user with a profile; the
// dashboard's agents table shows a dash for them, never "undefined", and
// the counts for a user without a profile.
func TestDashboardAgentsForAProfile(t *testing.T) {
	f := newFixtureWith(t, scopedOrganism(t, newGates(t)))
	secret := f.user("calcuser", auth.Operator)
	if err := f.auth.SetProfile(context.Background(), "calcuser", "calc"); err != nil {
		t.Fatal(err)
	}
	other := f.user("vic", auth.Viewer)
	row := `Array.from(document.querySelectorAll('#agents tbody tr')).map((r) => Array.from(r.cells).map((c) => c.textContent))` +
		`.find((cells) => cells[0] === 'calculate').slice(0, 4)`
	for _, tc := range []struct {
		user, secret string
		want         []string
	}{
		{"calcuser", secret, []string{"calculate", "idle", "—", "—"}},
		{"vic", other, []string{"calculate", "idle", "0", "0"}},
	} {
		ctx := browser(t)
		run(t, ctx, tc.user+" login", chromedp.Steps(
			f.loginSteps(tc.user, tc.secret),
			chromedp.WaitVisible(css(`#agents tbody tr`)),
		))
		got := run(t, ctx, tc.user+"'s calculate row", chromedp.Evaluate[[]string](row))
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s sees calculate's row (-want +got):\n%s", tc.user, diff)
		}
	}
}
