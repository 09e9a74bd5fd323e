package bus

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// TestThreadListPage: the dashboard's page (GET /api/v1/threads, no
// filter) lists the newest threads of a journal of many, each with its
// participants, counts and status, as the journal has them — whether the
// page's threads and conversations span partitions or not, and with some
// of them failed. XMLPIPE_THREADLIST_ROWS sets the journal's length (the
// time of a page is logged: the handler's cost on a real store).
func TestThreadListPage(t *testing.T) {
	rows := 3000
	if v := os.Getenv("XMLPIPE_THREADLIST_ROWS"); v != "" {
		var err error
		if rows, err = strconv.Atoi(v); err != nil || rows < 100 {
			t.Fatalf("XMLPIPE_THREADLIST_ROWS=%q: want a number >= 100", v)
		}
	}
	f := newFixture(t)
	viewer := f.tokens()[auth.Viewer]
	wantRows := fillThreadList(t, f, rows)
	for _, q := range []string{"", "&status=error", "&status=completed", "&before=end&status=error", "&agent=agent-3"} {
		var want []threadListRow
		for _, r := range wantRows {
			if len(want) < 30 && (q == "" || strings.HasSuffix(q, "&status="+r.Status) ||
				q == "&agent=agent-3" && slices.Contains(r.Participants, any("agent-3"))) {
				want = append(want, r)
			}
		}
		var (
			took []time.Duration
			body map[string]any
		)
		for range 5 {
			start := time.Now()
			var status int
			status, body, _ = f.do(http.MethodGet, "/api/v1/threads?limit=30"+q, viewer, nil)
			took = append(took, time.Since(start))
			if status != http.StatusOK {
				t.Fatalf("threads%s: %d %v", q, status, body)
			}
		}
		slices.Sort(took)
		t.Logf("GET /api/v1/threads?limit=30%s over %d journal rows: median %s (%s-%s)", q, rows, took[2], took[0], took[4])
		var got []threadListRow
		list, _ := body["threads"].([]any)
		for _, r := range list {
			m := r.(map[string]any)
			got = append(got, threadListRow{ID: m["id"].(string), Status: m["status"].(string), LastFrom: m["last_from"].(string),
				LastTo: m["last_to"].(string), Created: m["created_at"].(string), Last: m["last_activity"].(string),
				N: m["message_count"].(float64), Participants: m["participants"].([]any), Tags: m["payload_types"].([]any)})
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("threads?limit=30%s (-want +got):\n%s", q, diff)
		}
	}
}

// threadListRow is a thread of GET /api/v1/threads as the tests of the
// thread list compare it.
type threadListRow struct {
	ID, Status, LastFrom, LastTo, Created, Last string
	N                                           float64
	Participants, Tags                          []any
}

// fillThreadList journals rows entries of five a thread (a thread's
// entries interleaved with the next's), one thread spanning every
// partition and every seventh entry a <huh>, and returns the threads as
// GET /api/v1/threads should list them, newest first.
func fillThreadList(t *testing.T, f *fixture, rows int) []threadListRow {
	t.Helper()
	st := f.org.Store()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	type want struct {
		n           int
		first, last time.Time
		from, to    string
		names       []string
		tags        []string
		failed      bool
	}
	wants := map[string]*want{}
	for i := range rows {
		thread := fmt.Sprintf("t-%d", i/5+i%2)
		if i%97 == 0 {
			thread = "t-long" // spans every partition
		}
		from, to := fmt.Sprintf("agent-%d", i%4), fmt.Sprintf("agent-%d", (i+1)%3)
		e := store.Entry{Thread: thread, Conversation: thread, Direction: store.Inbound, Kind: store.Message,
			From: from, To: to, PayloadTag: "Greeting", Time: at.Add(time.Duration(i) * time.Millisecond),
			Bytes: fmt.Appendf(nil, `<message xmlns="https://xml-pipeline.org/ns/envelope/v1"><meta><from>%s</from>`+
				`<to>%s</to><thread>%s</thread></meta><Greeting xmlns=""><Name>n%d</Name></Greeting></message>`,
				from, to, thread, i)}
		if i%7 == 0 {
			e.Kind, e.PayloadTag = store.Huh, "huh"
		}
		if err := st.Append(e); err != nil {
			t.Fatal(err)
		}
		w := wants[thread]
		if w == nil {
			w = &want{first: e.Time}
			wants[thread] = w
		}
		w.n++
		w.last, w.from, w.to, w.failed = e.Time, from, to, w.failed || e.Kind == store.Huh
		for _, name := range []string{from, to} {
			if !slices.Contains(w.names, name) {
				w.names = append(w.names, name)
			}
		}
		if !slices.Contains(w.tags, e.PayloadTag) {
			w.tags = append(w.tags, e.PayloadTag)
		}
	}
	if err := st.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The newest threads, as the journal's last entries name them.
	var order []string
	for i := rows - 1; i >= 0; i-- {
		thread := fmt.Sprintf("t-%d", i/5+i%2)
		if i%97 == 0 {
			thread = "t-long"
		}
		if !slices.Contains(order, thread) {
			order = append(order, thread)
		}
	}
	var wantRows []threadListRow
	for _, id := range order {
		w := wants[id]
		status := "completed"
		if w.failed {
			status = "error"
		}
		names, tags := []any{}, []any{}
		for _, n := range w.names {
			names = append(names, n)
		}
		for _, tag := range slices.Sorted(slices.Values(w.tags)) {
			tags = append(tags, tag)
		}
		wantRows = append(wantRows, threadListRow{ID: id, Status: status, LastFrom: w.from, LastTo: w.to,
			Created: stamp(w.first), Last: stamp(w.last), N: float64(w.n), Participants: names, Tags: tags})
	}
	return wantRows
}

// TestThreadListCursor: paging GET /api/v1/threads with the cursor (from
// ?before=end, each page's "next" the before of the one after) lists every
// thread the filter keeps exactly once, newest first, as offset paging
// does — also when the scan budget runs out mid-page, leaving short pages;
// the last page has no next. A bad cursor, or a cursor with an offset, is
// refused.
func TestThreadListCursor(t *testing.T) {
	f := newFixture(t)
	viewer := f.tokens()[auth.Viewer]
	all := fillThreadList(t, f, 3000)
	list := func(path string) ([]threadListRow, string) {
		t.Helper()
		status, body, _ := f.do(http.MethodGet, path, viewer, nil)
		if status != http.StatusOK {
			t.Fatalf("GET %s: %d %v", path, status, body)
		}
		var got []threadListRow
		for _, r := range body["threads"].([]any) {
			m := r.(map[string]any)
			if !strings.HasPrefix(m["id"].(string), "t-") {
				continue // the organism's boot message
			}
			got = append(got, threadListRow{ID: m["id"].(string), Status: m["status"].(string), LastFrom: m["last_from"].(string),
				LastTo: m["last_to"].(string), Created: m["created_at"].(string), Last: m["last_activity"].(string),
				N: m["message_count"].(float64), Participants: m["participants"].([]any), Tags: m["payload_types"].([]any)})
		}
		next, _ := body["next"].(string)
		return got, next
	}
	tests := []struct {
		q    string
		keep func(threadListRow) bool
	}{
		{"", func(threadListRow) bool { return true }},
		{"&status=error", func(r threadListRow) bool { return r.Status == "error" }},
		{"&status=completed", func(r threadListRow) bool { return r.Status == "completed" }},
		{"&status=killed", func(r threadListRow) bool { return false }},
		{"&agent=agent-1", func(r threadListRow) bool {
			return r.LastFrom == "agent-1" || slices.Contains(r.Participants, any("agent-1"))
		}},
		{"&agent=agent-3&status=error", func(r threadListRow) bool {
			return r.Status == "error" && slices.Contains(r.Participants, any("agent-3"))
		}},
	}
	for _, tt := range tests {
		var want []threadListRow
		for _, r := range all {
			if tt.keep(r) {
				want = append(want, r)
			}
		}
		for _, budget := range []int64{0, 300} {
			t.Run(fmt.Sprintf("%s/budget=%d", tt.q, budget), func(t *testing.T) {
				threadScan.Store(budget)
				t.Cleanup(func() { threadScan.Store(0) })
				var got []threadListRow
				before, last := "end", int64(1)<<62
				for pages := 0; ; pages++ {
					if pages > 1000 {
						t.Fatal("the cursor does not reach the journal's start")
					}
					page, next := list("/api/v1/threads?limit=30&before=" + before + tt.q)
					if len(page) > 30 {
						t.Fatalf("page of %d threads, limit 30", len(page))
					}
					got = append(got, page...)
					if next == "" {
						break
					}
					n, err := strconv.ParseInt(next, 10, 64)
					if err != nil || n >= last {
						t.Fatalf("next %q after %d: want a smaller seq", next, last)
					}
					before, last = next, n
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("cursor pages (-want +got):\n%s", diff)
				}
				if budget != 0 {
					return
				}
				got = nil
				for offset := 0; offset <= len(want); offset += 30 {
					page, next := list(fmt.Sprintf("/api/v1/threads?limit=30&offset=%d%s", offset, tt.q))
					got = append(got, page...)
					if (next != "") != (offset+30 < len(want)) {
						t.Errorf("offset %d of %d: next %q", offset, len(want), next)
					}
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("offset pages (-want +got):\n%s", diff)
				}
			})
		}
	}
	for _, q := range []string{"before=0", "before=x", "before=", "before=5&offset=30"} {
		if status, body, _ := f.do(http.MethodGet, "/api/v1/threads?"+q, viewer, nil); status != http.StatusBadRequest {
			t.Errorf("GET /api/v1/threads?%s: %d %v, want 400", q, status, body)
		}
	}
}
