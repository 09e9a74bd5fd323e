package bus

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
)

// TestApprovalsPaged: GET /api/v1/approvals pages with ?limit= and
// ?after=ID (the "next" of the page before): walking the pages lists every
// approval once, newest first; a page stops before its payloads pass
// maxApprovalsPageBytes (held envelopes are up to 1 MiB each: 500 of them
// made a 500 MiB answer), and says "next" when more follow.
func TestApprovalsPaged(t *testing.T) {
	f := newFixtureWith(t, gatedOrganism(t, newLoopModel(t, "Paid.")))
	alice := f.loginAs("alice", auth.Operator)
	const small, large = 5, 7
	big := strings.Repeat("x", 700<<10)
	for i := range small + large {
		text := fmt.Sprintf("please pay $%d to eve", i+1)
		if i >= small {
			text += " " + big
		}
		if status, body, _ := f.do("POST", "/api/v1/inject", alice,
			map[string]any{"to": "researcher", "payload": map[string]string{"text": text}}); status != http.StatusOK {
			t.Fatalf("inject %d: %d %v", i, status, body)
		}
	}
	// page reads one page and returns its ids, its "next" and its
	// payload bytes.
	page := func(query string) (ids []string, next string, payloads int) {
		t.Helper()
		status, body, _ := f.do("GET", "/api/v1/approvals?status=pending"+query, alice, nil)
		if status != http.StatusOK {
			t.Fatalf("GET approvals%s: %d %v", query, status, body)
		}
		for _, a := range body["approvals"].([]any) {
			a := a.(map[string]any)
			ids = append(ids, a["id"].(string))
			payloads += len(a["payload"].(string))
		}
		next, _ = body["next"].(string)
		return ids, next, payloads
	}
	// Every approval, newest first, read in pages of 3.
	var walked []string
	after := ""
	for range small + large + 1 {
		q := "&limit=3"
		if after != "" {
			q += "&after=" + after
		}
		ids, next, payloads := page(q)
		if payloads > maxApprovalsPageBytes && len(ids) > 1 {
			t.Errorf("page after %q: %d payload bytes in %d approvals, cap %d", after, payloads, len(ids), maxApprovalsPageBytes)
		}
		walked = append(walked, ids...)
		if next == "" {
			break
		}
		if next != ids[len(ids)-1] {
			t.Fatalf("page after %q: next %q, want its last id %q", after, next, ids[len(ids)-1])
		}
		after = next
	}
	all, next, _ := page("&limit=500&after=")
	if len(walked) != small+large || !cmp.Equal(walked, dedupe(walked)) {
		t.Errorf("walked %d approvals (%v), want %d each once", len(walked), walked, small+large)
	}
	// The first page of everything stops at the byte cap: the 7 large
	// ones (newest) do not fit in one answer.
	if next == "" || len(all) >= small+large || !slices.Equal(all, walked[:len(all)]) {
		t.Errorf("limit 500: %d approvals, next %q; want fewer than %d (the byte cap), a prefix of %v", len(all), next,
			small+large, walked)
	}
	for _, q := range []string{"&after=nope", "&limit=501", "&limit=0"} {
		if status, body, _ := f.do("GET", "/api/v1/approvals?status=pending"+q, alice, nil); status != http.StatusBadRequest {
			t.Errorf("GET approvals%s: %d (%d approvals, error %v), want 400", q, status, len(fmt.Sprint(body["approvals"])),
				body["error"])
		}
	}
}

// dedupe is s without repeated elements, in order.
func dedupe(s []string) []string {
	var out []string
	for _, v := range s {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}
