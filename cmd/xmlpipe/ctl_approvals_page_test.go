package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/oob"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// pagedApprover is an oob.Approver over a fixed list, newest first.
type pagedApprover struct{ as []oob.Approval }

func (b pagedApprover) Approvals(_ context.Context, q oob.ApprovalQuery) ([]oob.Approval, error) {
	start := 0
	for i, a := range b.as {
		if a.ID == q.After {
			start = i + 1
		}
	}
	end := len(b.as)
	if q.Limit > 0 {
		end = min(end, start+q.Limit)
	}
	return b.as[start:end], nil
}

func (b pagedApprover) Decide(context.Context, string, bool, string, string) (oob.Approval, error) {
	return oob.Approval{}, oob.ErrApprovalNotFound
}

// ctl list-approvals prints every page the organism answers with, one
// document a page, following each page's next; with limit= it prints one
// page and says how to ask for the next.
func TestCtlListApprovalsFollowsPages(t *testing.T) {
	dir := t.TempDir()
	o, err := organism.Load("../../organism.yaml", organism.Options{DataDir: filepath.Join(dir, "data"), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = o.Shutdown(context.Background()) })
	big := strings.Repeat("x", 3<<20) // two do not fit a page
	var book pagedApprover
	now := time.Now().UTC()
	var want []string
	for i := range 3 {
		id := fmt.Sprintf("a%d", i)
		want = append(want, id)
		book.as = append(book.as, oob.Approval{ID: id, Kind: "tool", Status: "pending", Agent: "greeter",
			Target: "shouter", ThreadID: "t", Envelope: big, CreatedAt: now, ExpiresAt: now.Add(time.Hour)})
	}
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	cfg := o.Config.OOB
	cfg.Port, cfg.UnixSocket = 0, filepath.Join(dir, "run", "oob.sock")
	srv, err := oob.New(oob.Options{Config: cfg, Owner: pub, Logger: slog.New(slog.DiscardHandler), Target: oob.Target{Pump: o.Pump, Config: o.Config, Approver: book}})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })

	list := func(params ...string) (code int, stdout, stderr string) {
		t.Helper()
		ctx := context.Background()
		c, err := oob.Dial(ctx, "unix:"+cfg.UnixSocket, key)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		body, err := opElement("list-approvals", params)
		if err != nil {
			t.Fatal(err)
		}
		var out, errOut bytes.Buffer
		code = ctlListApprovals(ctx, c, ctlOptions{}, body, streams{in: strings.NewReader(""), out: &out, err: &errOut})
		return code, out.String(), errOut.String()
	}
	ids := func(stdout string) []string {
		var got []string
		for _, m := range regexp.MustCompile(`<id>(a\d)</id>`).FindAllStringSubmatch(stdout, -1) {
			got = append(got, m[1])
		}
		return got
	}

	code, stdout, stderr := list()
	if code != exitOK {
		t.Fatalf("list-approvals: %d\n%s", code, stderr)
	}
	if diff := cmp.Diff(want, ids(stdout)); diff != "" {
		t.Errorf("approvals printed (-want +got):\n%s", diff)
	}
	if n := strings.Count(stdout, "<privileged-response"); n != 3 {
		t.Errorf("%d documents printed, want one a page (3)", n)
	}

	code, stdout, stderr = list("limit=1")
	if code != exitOK || !cmp.Equal(ids(stdout), []string{"a0"}) ||
		!strings.Contains(stderr, "more approvals follow: add after=a0 for the next page") {
		t.Errorf("limit=1: %d %v\n%s", code, ids(stdout), stderr)
	}
	code, stdout, _ = list("limit=1", "after=a1")
	if code != exitOK || !cmp.Equal(ids(stdout), []string{"a2"}) {
		t.Errorf("limit=1 after=a1: %d %v", code, ids(stdout))
	}
}

// The channel's approver over the organism's governance says an after
// that names no approval is unknown (the organism alone lists nothing
// after it), so the channel answers INVALID_ARGUMENT, not an empty page.
func TestOOBApproverUnknownAfter(t *testing.T) {
	o, err := organism.Load("../../organism.yaml", organism.Options{DataDir: filepath.Join(t.TempDir(), "data"),
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = o.Shutdown(context.Background()) })
	as, err := oobApprover{o.Governance()}.Approvals(t.Context(), oob.ApprovalQuery{After: "000000000000"})
	if !errors.Is(err, oob.ErrApprovalNotFound) {
		t.Errorf("Approvals after an unknown id = %v, %v; want ErrApprovalNotFound", as, err)
	}
}
