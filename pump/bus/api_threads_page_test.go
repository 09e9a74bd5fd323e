package bus

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
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
	type row struct {
		ID, Status, LastFrom, LastTo, Created, Last string
		N                                           float64
		Participants, Tags                          []any
	}
	var wantRows []row
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
		wantRows = append(wantRows, row{ID: id, Status: status, LastFrom: w.from, LastTo: w.to,
			Created: stamp(w.first), Last: stamp(w.last), N: float64(w.n), Participants: names, Tags: tags})
	}
	for _, q := range []string{"", "&status=error", "&status=completed"} {
		var want []row
		for _, r := range wantRows {
			if len(want) < 30 && (q == "" || q == "&status="+r.Status) {
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
		var got []row
		list, _ := body["threads"].([]any)
		for _, r := range list {
			m := r.(map[string]any)
			got = append(got, row{ID: m["id"].(string), Status: m["status"].(string), LastFrom: m["last_from"].(string),
				LastTo: m["last_to"].(string), Created: m["created_at"].(string), Last: m["last_activity"].(string),
				N: m["message_count"].(float64), Participants: m["participants"].([]any), Tags: m["payload_types"].([]any)})
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("threads?limit=30%s (-want +got):\n%s", q, diff)
		}
	}
}
