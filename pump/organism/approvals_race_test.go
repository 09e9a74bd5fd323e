package organism

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// TestApprovalDecidedTwiceConcurrently decides every approval twice at once
// — an operator on REST and another on the console — with and without a
// store: exactly one decision wins, and the other is told how the approval
// ended (a DecidedError naming the winner's status), never that there is no
// such approval or that it "was pending already".
func TestApprovalDecidedTwiceConcurrently(t *testing.T) {
	for _, durable := range []bool{false, true} {
		t.Run(fmt.Sprintf("store=%v", durable), func(t *testing.T) {
			var s *store.Store
			if durable {
				var err error
				if s, err = store.Open(t.TempDir(), store.Options{}); err != nil {
					t.Fatal(err)
				}
				defer s.Close()
			}
			b := newApprovalBook(s)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			const n = 100
			now := time.Now()
			for i := range n {
				a := Approval{ID: fmt.Sprintf("a%03d", i), Kind: KindTool, Seq: int64(i + 1), Conversation: "c", Thread: "t",
					Agent: "researcher", Target: "run_command", Payload: "<x/>", CreatedAt: now,
					ExpiresAt: now.Add(time.Hour), Status: StatusPending}
				if err := b.add(a, func(string) {}); err != nil {
					t.Fatal(err)
				}
			}
			defer b.stop()
			type outcome struct{ Wins, Decided, Other int }
			var got outcome
			var others []string
			for i := range n {
				id := fmt.Sprintf("a%03d", i)
				start := make(chan struct{})
				var wg sync.WaitGroup
				errs := make([]error, 2)
				for j, by := range []string{"olga", "ivan"} {
					wg.Add(1)
					go func() {
						defer wg.Done()
						<-start
						_, errs[j] = b.decide(ctx, id, StatusApproved, by, "fine", time.Now())
					}()
				}
				close(start)
				wg.Wait()
				for _, err := range errs {
					var de *DecidedError
					switch {
					case err == nil:
						got.Wins++
					case errors.As(err, &de) && de.Approval.Status == StatusApproved && de.Approval.DecidedBy != "":
						got.Decided++
					default:
						got.Other++
						others = append(others, err.Error())
					}
				}
			}
			if diff := cmp.Diff(outcome{Wins: n, Decided: n}, got); diff != "" {
				t.Errorf("outcomes of %d double decisions (-want +got):\n%s\nother errors: %q", n, diff, others)
			}
		})
	}
}
