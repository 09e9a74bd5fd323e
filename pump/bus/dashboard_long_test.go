package bus

import (
	"slices"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
)

// TestDashboardShowsALongConversation: a conversation of more envelopes
// than one read of the dashboard asks for (its pageSize, 500) opens whole,
// in journal order — not cut off at the first page — and what is
// journaled of it afterwards is added, each envelope once.
func TestDashboardShowsALongConversation(t *testing.T) {
	f := newFixture(t)
	ctx := browser(t)
	secret := f.user("ada", auth.Admin)
	const conv = "0b1c2d3e-4f50-4a6b-8c7d-9e0f1a2b3c4d"
	seqs := appendConversation(t, f.org.Store(), conv, 1100)
	row := css(`#feed li[data-conversation="` + conv + `"]`)
	run(t, ctx, "open the long conversation", chromedp.Steps(
		f.loginSteps("ada", secret),
		chromedp.WaitVisible(row),
		chromedp.Click(row),
	))
	shown := func(want int) []int64 {
		t.Helper()
		var got []int64
		for deadline := time.Now().Add(stepTimeout); ; {
			got = run(t, ctx, "envelopes shown", chromedp.Evaluate[[]int64](
				`Array.from(document.querySelectorAll("#envelopes li")).map((li) => Number(li.dataset.seq || 0))`))
			if len(got) >= want {
				return got
			}
			if time.Now().After(deadline) {
				t.Fatalf("the open conversation shows %d envelopes, want %d", len(got), want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if got := shown(len(seqs)); !slices.Equal(got, seqs) {
		t.Fatalf("the conversation shows %d envelopes %v…, want its %d in journal order", len(got), head(got), len(seqs))
	}
	more := appendConversation(t, f.org.Store(), conv, 3)
	want := append(seqs, more...)
	if got := shown(len(want)); !slices.Equal(got, want) {
		t.Fatalf("after 3 more the conversation shows %d envelopes (…%v), want %d in order, each once",
			len(got), got[max(0, len(got)-5):], len(want))
	}
}

// head is the first few seqs of s, for a message.
func head(s []int64) []int64 { return s[:min(5, len(s))] }
