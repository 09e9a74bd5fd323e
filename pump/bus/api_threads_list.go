package bus

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"strconv"
	"sync/atomic"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// threadScanBudget bounds the journal rows one page of GET /api/v1/threads
// walks when the client pages with ?before= (a cursor): a filter few
// threads match answers in bounded time with a short page and the cursor
// to go on from, instead of walking the whole journal.
const threadScanBudget = 16384

// threadScan, when not 0, replaces threadScanBudget (for the tests).
var threadScan atomic.Int64

// beforeEnd is the ?before= of the newest page of a cursor walk.
const beforeEnd = "end"

// beforeOf parses ?before= (a journal seq, or "end" for the journal's end:
// 0); cursor says it was given. A bad value is answered 400 and ok is false.
func beforeOf(w http.ResponseWriter, r *http.Request) (before int64, cursor, ok bool) {
	q := r.URL.Query()
	if !q.Has("before") {
		return 0, false, true
	}
	v := q.Get("before")
	if v == beforeEnd {
		return 0, true, true
	}
	before, err := strconv.ParseInt(v, 10, 64)
	if err != nil || before < 1 {
		writeError(w, http.StatusBadRequest, `Invalid before: want a sequence number (a page's "next") or "end"`)
		return 0, false, false
	}
	return before, true, true
}

// threadRow is a thread of the page being gathered, with its entries.
type threadRow struct {
	body    apiThreadBody
	lastSeq int64
	entries []store.Entry
}

// apiThreads is GET /api/v1/threads: journal threads, most recently active
// first (by the seq of their last entry), filtered (status, agent, since)
// and paged — by limit and offset, or by a cursor: ?before=SEQ (the "next"
// of the page before; "end" for the newest page) lists the threads whose
// last entry is below SEQ, walking at most threadScanBudget journal rows,
// so a page may hold fewer than limit threads. Every answer whose list may
// go on carries "next", the before of the page after it. The journal is
// walked backwards from the cursor (store.Reader.WalkThreads), a batch of
// threads at a time: each batch's statuses are read from the entries the
// walk read, and the conversations' outcomes a batch at a time, until the
// page is full.
func (s *Server) apiThreads(w http.ResponseWriter, r *http.Request, st *store.Store) {
	p, since, ok := requestPage(w, r, true)
	if !ok {
		return
	}
	before, cursor, ok := beforeOf(w, r)
	if !ok {
		return
	}
	if cursor && p.offset > 0 {
		writeError(w, http.StatusBadRequest, "Give before or offset, not both")
		return
	}
	status := r.URL.Query().Get("status")
	if status != "" && !slices.Contains(threadStatuses, status) {
		writeError(w, http.StatusBadRequest, "Invalid status: want active, completed, error, killed, cancelled, denied or expired")
		return
	}
	sess := sessionOf(r.Context())
	want := p.offset + p.limit
	walk := store.ThreadWalk{Before: before, Want: want,
		Filter: store.ThreadFilter{Participant: r.URL.Query().Get("agent"), Since: since}}
	if cursor {
		walk.Budget = cmp.Or(int(threadScan.Load()), threadScanBudget)
	}
	pg := threadPager{s: s, ctx: r.Context(), sess: sess, view: s.journalView(sess, st), status: status,
		convs: s.conversationOutcomes(r.Context(), st), want: want}
	next, err := st.WalkThreads(walk, pg.add)
	if err != nil {
		s.internalError(w, "journal threads", err)
		return
	}
	rows := pg.rows
	if len(rows) == want {
		next = rows[len(rows)-1].lastSeq // the page is full: the next resumes after its last thread
	}
	rows = rows[min(p.offset, len(rows)):]
	out := make([]apiThreadBody, 0, len(rows))
	convs := make([]string, 0, len(rows))
	for _, row := range rows {
		row.body.Participants = participantsOf(row.entries)
		out = append(out, row.body)
		convs = append(convs, cmp.Or(row.body.Conversation, row.body.ID))
	}
	owners, err := s.pump.ThreadOwners(convs)
	if err != nil {
		s.internalError(w, "thread owner", err)
		return
	}
	for i := range out {
		out[i].Owner = owners[convs[i]]
	}
	if sess.Profile != "" { // a participant outside the profile hides the thread (the page may come out short)
		out = slices.DeleteFunc(out, func(b apiThreadBody) bool { return !s.namesVisible(sess, b.Participants...) })
	}
	body := p.body("threads", out)
	if next > 0 {
		body["next"] = strconv.FormatInt(next, 10)
	}
	writeJSON(w, http.StatusOK, body)
}

// threadPager gathers the page of apiThreads from the batches of a walk.
type threadPager struct {
	s      *Server
	ctx    context.Context
	sess   auth.Session
	view   *journalView
	status string
	convs  *conversationOutcomes
	want   int
	rows   []threadRow
}

// add is the walk's store.WalkFunc: it keeps the threads of sums whose
// status the request asks for and that the session may see, until want
// are kept. As apiThread decides: any entry that records a failure (a
// refused inbound message keeps its payload's root tag) or a failure's
// tag says that something failed, was denied or cancelled, and its
// thread's entries say which; its conversation's entries say whether it
// was denied or cancelled — read, a batch at a time, only for the threads
// whose status is not killed, error or active already, and only when the
// request could keep them.
func (pg *threadPager) add(sums []store.ThreadSummary, entries map[string][]store.Entry) (bool, error) {
	s := pg.s
	outcomes := make([]threadOutcome, len(sums))
	statuses := make([]string, len(sums))
	var undecided []store.ThreadSummary
	for i, t := range sums {
		if t.Failures > 0 || slices.ContainsFunc(t.PayloadTags, func(tag string) bool { return slices.Contains(errorTags, tag) }) {
			outcomes[i] = s.outcomeOf(pg.ctx, t.Conversation, entries[t.ID], false)
		}
		statuses[i] = s.runStatus(t.ID, t.Conversation, outcomes[i])
		if statuses[i] == "" {
			undecided = append(undecided, t)
		}
	}
	decides := pg.status == "" || !slices.Contains([]string{statusKilled, statusError, statusActive}, pg.status)
	if decides {
		if err := pg.convs.read(undecided); err != nil {
			return false, err
		}
	}
	for i, t := range sums {
		if statuses[i] == "" {
			if !decides {
				continue // neither killed, failed nor active: not what was asked for
			}
			o, err := pg.convs.of(t.Conversation, outcomes[i])
			if err != nil {
				return false, err
			}
			statuses[i] = cmp.Or(o.decisionStatus(), statusCompleted)
		}
		if pg.status != "" && statuses[i] != pg.status || !pg.view.thread(t.ID, t.Conversation) ||
			!s.namesVisible(pg.sess, t.LastFrom, t.LastTo) {
			continue
		}
		pg.rows = append(pg.rows, threadRow{lastSeq: t.LastSeq, entries: entries[t.ID],
			body: apiThreadBody{ID: t.ID, Conversation: t.Conversation, Status: statuses[i], MessageCount: t.Messages,
				CreatedAt: stamp(t.First), LastActivity: stamp(t.Last), LastFrom: t.LastFrom, LastTo: t.LastTo,
				PayloadTypes: orEmpty(t.PayloadTags)}})
		if len(pg.rows) == pg.want {
			return true, nil
		}
	}
	return false, nil
}
