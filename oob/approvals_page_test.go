package oob

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// bookApprover is an Approver over a fixed list of approvals, newest
// first, as the organism's governance pages them.
type bookApprover struct{ as []Approval }

func (b bookApprover) Approvals(_ context.Context, q ApprovalQuery) ([]Approval, error) {
	start := 0
	if q.After != "" {
		start = -1
		for i, a := range b.as {
			if a.ID == q.After {
				start = i + 1
			}
		}
		if start < 0 {
			return nil, fmt.Errorf("%w: %s", ErrApprovalNotFound, q.After)
		}
	}
	end := len(b.as)
	if q.Limit > 0 {
		end = min(end, start+q.Limit)
	}
	return b.as[start:end], nil
}

func (b bookApprover) Decide(context.Context, string, bool, string, string) (Approval, error) {
	return Approval{}, ErrApprovalNotFound
}

// A page of list-approvals holds no more than MaxApprovalsPageBytes of
// held payloads (one at least), however many the limit allows, and says
// where the next page begins; following "next" reads every approval once,
// in order.
func TestListApprovalsPagesByBytes(t *testing.T) {
	big := "<Blob>" + strings.Repeat("x", 900<<10) + "</Blob>"
	var book bookApprover
	var want []string
	now := time.Now().UTC()
	for i := range 14 {
		id := fmt.Sprintf("a%02d", i)
		want = append(want, id)
		book.as = append(book.as, Approval{ID: id, Kind: "tool", Status: "pending", Agent: "greeter", Target: "shouter",
			ThreadID: "t", Envelope: big, CreatedAt: now, ExpiresAt: now.Add(time.Hour)})
	}
	f := newFixture(t, func(o *Options) { o.Target.Approver = book })

	var got []string
	after, pages := "", 0
	for {
		op := `<list-approvals><limit>500</limit></list-approvals>`
		if after != "" {
			op = `<list-approvals><limit>500</limit><after>` + after + `</after></list-approvals>`
		}
		raw := f.srv.Handle(f.sign(t, fmt.Sprintf("req-%d", f.ids.Add(1)), op))
		if len(raw) > MaxApprovalsPageBytes+64<<10 {
			t.Fatalf("page %d is %d bytes, above the %d of a page", pages, len(raw), MaxApprovalsPageBytes)
		}
		t.Logf("page %d: %d bytes", pages, len(raw))
		r := mustResponse(t, raw)
		if r.Payload.Approvals == nil {
			t.Fatalf("list-approvals: %+v", r.Payload)
		}
		page := r.Payload.Approvals
		if len(page.Approvals) == 0 || page.Count != len(page.Approvals) {
			t.Fatalf("page %d: %d approvals, count %d", pages, len(page.Approvals), page.Count)
		}
		for _, a := range page.Approvals {
			got = append(got, a.ID)
		}
		pages++
		if page.Next == "" {
			break
		}
		if page.Next != got[len(got)-1] {
			t.Fatalf("next %q is not the page's last approval %q", page.Next, got[len(got)-1])
		}
		after = page.Next
		if pages > len(want) {
			t.Fatal("the pages never end")
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("approvals read over the pages (-want +got):\n%s", diff)
	}
	if pages < 3 {
		t.Errorf("%d pages for 14 approvals of 900 KiB: the byte cap did not cut them", pages)
	}

	// A page of small ones stops at the limit and says what follows.
	r := f.do(t, `<list-approvals><limit>1</limit></list-approvals>`)
	if r.Payload.Approvals == nil || r.Payload.Approvals.Count != 1 || r.Payload.Approvals.Next != "a00" {
		t.Errorf("limit 1: %+v", r.Payload.Approvals)
	}
	for _, tc := range []struct{ op, code string }{
		{`<list-approvals><limit>501</limit></list-approvals>`, CodeInvalidArgument},
		{`<list-approvals><after>nosuch</after></list-approvals>`, CodeInvalidArgument},
	} {
		if r := f.do(t, tc.op); code(r) != tc.code {
			t.Errorf("%s: %+v, want %s", tc.op, r.Payload, tc.code)
		}
	}
}
