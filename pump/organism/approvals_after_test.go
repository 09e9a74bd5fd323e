package organism

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestApprovalListAfter: ApprovalFilter.After pages an organism without
// a store as the store does: the approvals after the cursor, newest first
// and by id among those created at once; none after an unknown id.
func TestApprovalListAfter(t *testing.T) {
	b := newApprovalBook(nil)
	t.Cleanup(b.stop)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, id := range []string{"e", "d", "c", "b", "a"} {
		created := t0.Add(time.Duration(i/2) * time.Minute) // e,d at t0; c,b at +1m; a at +2m
		if err := b.add(Approval{ID: id, Status: StatusPending, CreatedAt: created}, func(string) {}); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		after string
		limit int
		want  []string
	}{
		{"", 0, []string{"a", "b", "c", "d", "e"}},
		{"", 2, []string{"a", "b"}},
		{"b", 2, []string{"c", "d"}},
		{"d", 0, []string{"e"}},
		{"e", 0, nil},
		{"zz", 0, nil},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("after %q limit %d", tt.after, tt.limit), func(t *testing.T) {
			as, err := b.list(context.Background(), ApprovalFilter{After: tt.after, Limit: tt.limit})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, a := range as {
				got = append(got, a.ID)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ids (-want +got):\n%s", diff)
			}
		})
	}
}
