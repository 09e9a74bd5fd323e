package bus

import (
	"bytes"
	"cmp"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/registry/store"
	"github.com/xml-pipeline/xmlpipe/schemas"
)

// Thread statuses of the API.
const (
	statusActive    = "active"
	statusCompleted = "completed"
	statusError     = "error"
	statusKilled    = "killed"
)

// Pagination of the journal endpoints.
const (
	defaultLimit = 50
	maxLimit     = 1000
	// messageScan bounds how many recent journal entries /messages filters
	// by agent or time.
	messageScan = 10000
)

// errorTags are the payload tags of failure messages in the journal.
var errorTags = []string{"huh", "SystemError"}

// apiThreadBody is the Thread model. A conversation spans several threads
// (each hop that forwards opens a child thread); Conversation names it.
type apiThreadBody struct {
	ID           string `json:"id"`
	Conversation string `json:"conversation"`
	// Owner is the user who began the conversation (through REST, /ws or
	// the console: api:USER, websocket:USER, console:USER) — the one whose
	// sessions may continue, cancel and kill it besides an admin; "" when
	// no user began it (a listener, a federation peer, a script).
	Owner        string   `json:"owner"`
	Status       string   `json:"status"`
	Participants []string `json:"participants"`
	MessageCount int64    `json:"message_count"`
	CreatedAt    string   `json:"created_at"`
	LastActivity string   `json:"last_activity"`
	LastFrom     string   `json:"last_from,omitempty"`
	LastTo       string   `json:"last_to,omitempty"`
	PayloadTypes []string `json:"payload_types"`
	Error        string   `json:"error,omitempty"`
	// Withheld, when set, says why Error does not quote the failure:
	// "memory" for a failure of memory traffic (what an agent asked to
	// remember, which it may quote), shown to the conversation's owner and
	// admins only.
	Withheld string `json:"withheld,omitempty"`
}

// apiMessage is the Message model: a journal entry or a live event. ID is
// the SHA-256 (hex) of the canonical envelope, as the journal stores it;
// Payload is the canonical payload XML.
type apiMessage struct {
	ID           string `json:"id"`
	Seq          int64  `json:"seq,omitempty"`
	ThreadID     string `json:"thread_id"`
	Conversation string `json:"conversation,omitempty"`
	Direction    string `json:"direction"`
	Kind         string `json:"kind"`
	From         string `json:"from"`
	To           string `json:"to"`
	Listener     string `json:"listener,omitempty"`
	PayloadType  string `json:"payload_type"`
	Payload      string `json:"payload"`
	Timestamp    string `json:"timestamp"`
	// Repaired marks a message the organism accepted only after repairing
	// it (the journal records what was repaired; the details stay there).
	Repaired bool `json:"repaired,omitempty"`
	// Diagnostics, for a journal entry that is not a message (a <huh>, a
	// SystemError, a dead letter, a refusal, a decision), say why: the
	// reasons the journal recorded, one a line (a refused message's
	// payload_type is often "": it was refused before its payload was
	// known).
	Diagnostics []string `json:"diagnostics,omitempty"`
	// Profile is the security profile of the thread a journaled message
	// travelled on, as the journal recorded it: "" for none (the implicit
	// profile), absent when not recorded (journaled before the journal
	// recorded profiles) and for live events.
	Profile *string `json:"profile,omitempty"`
	// Outcome, for a journal entry that records a decision rather than a
	// failure, says which: "denied" for the refusal a denied approval
	// answered with or a refusal by policy (a constitution deny rule,
	// memory law: it names the rule), "expired" for the refusal of an
	// approval nobody decided in time, "cancelled" for a message a cancel
	// dropped (its dead letter). Absent for every other entry: a refusal
	// or dead letter without it is a failure.
	Outcome string `json:"outcome,omitempty"`
	// Pruned, for a journal entry retention deleted, says why and when:
	// the message's metadata is kept, its payload is not (payload "").
	Pruned *apiPruned `json:"pruned,omitempty"`
	// Withheld, when set, says why the payload is not shown (payload ""):
	// "memory" for what an agent asked to remember (or the memory
	// listener's answer), shown to the conversation's owner and admins
	// only — to anyone else the message shows that it happened.
	Withheld string `json:"withheld,omitempty"`
}

// apiPruned says why (the retention policy) and when a journal entry was
// pruned.
type apiPruned struct {
	Reason string `json:"reason"`
	At     string `json:"at"`
}

// positionMessage is the Message model of a journal position: an entry, or
// what retention kept of a pruned one; details says whether its reader
// sees failures' details (journalDiagnostics).
func positionMessage(p store.Position, details bool) apiMessage {
	m := entryMessage(p.Entry, details)
	if p.Pruned != nil {
		m.Payload, m.Pruned = "", &apiPruned{Reason: p.Pruned.Reason, At: stamp(p.Pruned.At)}
	}
	if !p.ProfileUnknown {
		m.Profile = &p.Profile
	}
	return m
}

func entryMessage(e store.Entry, details bool) apiMessage {
	payload := payloadOf(e.Bytes)
	if payload == nil {
		payload = e.Bytes
	}
	m := apiMessage{ID: hex.EncodeToString(e.SHA256[:]), Seq: e.Seq, ThreadID: e.Thread,
		Conversation: e.Conversation, Direction: e.Direction.String(), Kind: e.Kind.String(), From: e.From, To: e.To,
		Listener: e.Listener, PayloadType: e.PayloadTag, Payload: string(payload), Timestamp: stamp(e.Time),
		Repaired: e.Kind == store.Message && e.Diagnostics != ""}
	if e.Kind != store.Message && e.Diagnostics != "" {
		m.Diagnostics = journalDiagnostics(e.Kind, strings.Split(e.Diagnostics, "\n"), details)
	}
	return m
}

// page is the limit and offset of a request.
type page struct{ limit, offset int }

// pageOf parses ?limit= (default 50, at most 1000) and ?offset=; the
// string is the 400 message of a bad value.
func pageOf(r *http.Request) (page, string) {
	p := page{limit: defaultLimit}
	q := r.URL.Query()
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxLimit {
			return p, fmt.Sprintf("Invalid limit: want 1..%d", maxLimit)
		}
		p.limit = n
	}
	if v := q.Get("offset"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return p, "Invalid offset"
		}
		p.offset = n
	}
	return p, ""
}

// sinceOf parses ?since= (RFC 3339); the string is the 400 message of a bad
// value.
func sinceOf(r *http.Request) (time.Time, string) {
	v := r.URL.Query().Get("since")
	if v == "" {
		return time.Time{}, ""
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, "Invalid since: want RFC 3339"
	}
	return t, ""
}

// requestPage is the request's page (see pageOf), with ?since= (see
// sinceOf) when withSince; a bad value is answered 400 with its message
// and ok is false.
func requestPage(w http.ResponseWriter, r *http.Request, withSince bool) (p page, since time.Time, ok bool) {
	p, bad := pageOf(r)
	if bad == "" && withSince {
		since, bad = sinceOf(r)
	}
	if bad != "" {
		writeError(w, http.StatusBadRequest, bad)
		return p, since, false
	}
	return p, since, true
}

// paged is the page p of rows.
func paged[T any](rows []T, p page) []T {
	rows = rows[min(p.offset, len(rows)):]
	return rows[:min(p.limit, len(rows))]
}

// body is the JSON answer carrying a page of rows under key, with the
// page's limit and offset.
func (p page) body(key string, rows any) map[string]any {
	return map[string]any{key: rows, "limit": p.limit, "offset": p.offset}
}

// writeMessages answers the page p of journal positions as
// {"messages":[Message…], "limit","offset"}, as sess may read them, each
// entry that records an operator's decision marked with its outcome.
func (s *Server) writeMessages(w http.ResponseWriter, r *http.Request, sess auth.Session, ps []store.Position, p page) {
	s.writeMessagesWith(w, r, sess, ps, p, nil)
}

// writeMessagesWith is writeMessages with a thread's "history_gone" (when
// not nil: api_history_gone.go).
func (s *Server) writeMessagesWith(w http.ResponseWriter, r *http.Request, sess auth.Session, ps []store.Position, p page,
	gone *apiHistoryGone) {
	ps = paged(ps, p)
	out := make([]apiMessage, 0, len(ps))
	details := seesFailureDetail(sess)
	decisions := s.entryDecisions(r.Context())
	memory := s.memoryReader(sess)
	for _, e := range ps {
		m := positionMessage(e, details)
		if e.Pruned == nil {
			m.Outcome = decisions.of(e.Entry)
			memory.withhold(&m, e.Entry)
		}
		out = append(out, m)
	}
	body := p.body("messages", out)
	if gone != nil {
		body["history_gone"] = gone
	}
	writeJSON(w, http.StatusOK, body)
}

// withPruned merges the committed entries of a thread or conversation with
// its pruned ones (keep selects them), in seq order.
func withPruned(entries []store.Entry, pruned []store.Pruned, keep func(store.Pruned) bool) []store.Position {
	out := make([]store.Position, 0, len(entries)+len(pruned))
	for _, e := range entries {
		out = append(out, store.Position{Entry: e})
	}
	for i := range pruned {
		if keep(pruned[i]) {
			out = append(out, store.Position{Entry: pruned[i].Entry, Pruned: &pruned[i]})
		}
	}
	slices.SortStableFunc(out, func(a, b store.Position) int { return cmp.Compare(a.Seq, b.Seq) })
	return out
}

// journalHandler is a handler of an endpoint that reads the journal.
type journalHandler func(w http.ResponseWriter, r *http.Request, st *store.Store)

// journaled adapts h to an http.HandlerFunc: without a journal (an
// in-memory organism) it answers 503 {"error":"Journal not available"}.
func (s *Server) journaled(h journalHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.opts.Store == nil {
			writeError(w, http.StatusServiceUnavailable, "Journal not available")
			return
		}
		h(w, r, s.opts.Store)
	}
}

// threadStatus is the status of thread id of conversation conv ("" when
// unknown): killed (by the API, the console, OOB or Ask, in this run or
// an earlier one: wasKilled), error (failed: a failure message on it),
// active (its conversation has a message in flight — also one recovered
// at start, waiting on an approval or a halt, that no event has named
// since), else what the
// decisions of its latest answer make of it (decisionStatus: cancelled,
// denied, expired), else completed.
func (s *Server) threadStatus(id, conv string, o threadOutcome) string {
	return cmp.Or(s.runStatus(id, conv, o), o.decisionStatus(), statusCompleted)
}

// runStatus is the status of threadStatus that its conversation's
// decisions do not change: killed, error or active; "" for none of them.
func (s *Server) runStatus(id, conv string, o threadOutcome) string {
	switch {
	case s.wasKilled(id, conv):
		return statusKilled
	case o.failed:
		return statusError
	case s.live.has(id) || s.inFlight(cmp.Or(conv, id)):
		return statusActive
	}
	return ""
}

// threadStatuses are the statuses ?status= may ask for.
var threadStatuses = []string{statusActive, statusCompleted, statusError, statusKilled, statusCancelled, statusDenied,
	statusExpired}

// wasKilled reports whether thread id of conversation conv was killed:
// through this server, or as the pump (and its journal, across restarts)
// remembers kills.
func (s *Server) wasKilled(id, conv string) bool {
	if s.killed.has(id, conv) {
		return true
	}
	if conv == "" {
		conv = id
	}
	killed, err := s.pump.WasKilled(conv)
	if err != nil {
		s.log.Warn("thread status: killed conversations lookup failed", "thread", id, "error", err)
	}
	return killed
}

// threadEntries returns a thread's journal entries and its conversation;
// 404 when the thread is neither journaled nor live, or not one sess may
// see (see profile.go). The conversation is the entries' — else the live
// thread's root, else the one the journal kept with its pruned entries —
// "" when none says.
func (s *Server) threadEntries(w http.ResponseWriter, sess auth.Session, st *store.Store, id string) ([]store.Entry, string, bool) {
	entries, err := st.Thread(id)
	if err != nil {
		s.internalError(w, "journal thread", err)
		return nil, "", false
	}
	conv, ok := s.threadOf(w, sess, st, id, entries)
	return entries, conv, ok
}

// threadConversation is threadEntries for a reader that needs the
// thread's conversation, not its entries: it reads the thread's first
// entry only (which names the conversation) — for a user with a profile,
// whose check looks at every participant of the thread, with the names its
// entries carry as threadNames keeps them (only the entries journaled since
// they were last read are read) — unless that entry names none.
func (s *Server) threadConversation(w http.ResponseWriter, sess auth.Session, st *store.Store, id string) (string, bool) {
	first, err := st.ThreadAfter(id, 0, 1)
	if err != nil {
		s.internalError(w, "journal thread", err)
		return "", false
	}
	if len(first) == 0 || first[0].Conversation == "" {
		_, conv, ok := s.threadEntries(w, sess, st, id)
		return conv, ok
	}
	conv := first[0].Conversation
	if sess.Profile == "" {
		return conv, true
	}
	names, err := s.names.of(st, id)
	if err != nil {
		s.internalError(w, "journal thread", err)
		return "", false
	}
	if !s.journalView(sess, st).thread(id, conv) || !s.namesVisible(sess, names...) {
		writeError(w, http.StatusNotFound, "Thread not found")
		return "", false
	}
	return conv, true
}

// threadOf resolves thread id, whose journal entries are entries, for
// threadEntries: its conversation, or 404.
func (s *Server) threadOf(w http.ResponseWriter, sess auth.Session, st *store.Store, id string, entries []store.Entry) (string, bool) {
	conv := ""
	for _, e := range entries {
		if e.Conversation != "" {
			conv = e.Conversation
			break
		}
	}
	if conv == "" {
		conv = s.pump.Threads().Root(id)
	}
	known := len(entries) > 0 || conv != ""
	if !known || conv == "" {
		known = s.prunedThread(st, id, &conv) || known
	}
	if !known || sess.Profile != "" &&
		(!s.journalView(sess, st).thread(id, conv) || !s.namesVisible(sess, participantsOf(entries)...)) {
		writeError(w, http.StatusNotFound, "Thread not found")
		return "", false
	}
	return conv, true
}

// prunedThread reports whether the journal holds pruned entries of thread
// id (and sets *conv to its conversation): a thread all of whose entries
// retention pruned still exists.
func (s *Server) prunedThread(st *store.Store, id string, conv *string) bool {
	pruned, err := st.PrunedOf(id)
	if err != nil {
		s.log.Error("journal pruned entries", "thread", id, "error", err)
		return false
	}
	for _, p := range pruned {
		if p.Thread == id {
			*conv = p.Conversation
			return true
		}
	}
	return false
}

// apiThread is GET /api/v1/threads/{id}.
func (s *Server) apiThread(w http.ResponseWriter, r *http.Request, st *store.Store) {
	id := r.PathValue("id")
	sess := sessionOf(r.Context())
	entries, conv, ok := s.threadEntries(w, sess, st, id)
	if !ok {
		return
	}
	details := seesFailureDetail(sess)
	b := apiThreadBody{ID: id, Conversation: conv, MessageCount: int64(len(entries)),
		PayloadTypes: []string{}}
	for i, e := range entries {
		if i == 0 {
			b.CreatedAt = stamp(e.Time)
		}
		if e.Conversation != "" {
			b.Conversation = e.Conversation
		}
		b.LastActivity, b.LastFrom, b.LastTo = stamp(e.Time), e.From, e.To
		if e.PayloadTag != "" && !slices.Contains(b.PayloadTypes, e.PayloadTag) {
			b.PayloadTypes = append(b.PayloadTypes, e.PayloadTag)
		}
	}
	slices.Sort(b.PayloadTypes)
	b.Participants = participantsOf(entries)
	var err error
	if b.Owner, err = s.conversationOwner(cmp.Or(b.Conversation, id)); err != nil {
		s.internalError(w, "thread owner", err)
		return
	}
	o, err := s.conversationOutcomes(r.Context(), st).of(b.Conversation,
		s.outcomeOf(r.Context(), b.Conversation, entries, details))
	if err != nil {
		s.internalError(w, "journal conversation", err)
		return
	}
	b.Error = o.err
	if o.errMemory && !s.memoryReader(sess).reads(cmp.Or(b.Conversation, id)) {
		b.Error, b.Withheld = withheldMemoryText, withheldMemory
	}
	b.Status = s.threadStatus(id, b.Conversation, o)
	writeJSON(w, http.StatusOK, b)
}

// conversationOwner is the user who began conversation conv, as the
// ownership check of a continuation, a cancel and a kill knows it
// (ownsConversation, pump.Pump.ThreadOwner); "" for none.
func (s *Server) conversationOwner(conv string) (string, error) {
	owner, err := s.pump.ThreadOwner(conv)
	if err != nil {
		return "", fmt.Errorf("owner of conversation %s: %w", conv, err)
	}
	return owner, nil
}

// participantsOf lists the senders, addressees and receiving listeners of
// a thread's entries, in order of first appearance.
func participantsOf(entries []store.Entry) []string {
	out := []string{}
	for _, e := range entries {
		for _, name := range []string{e.From, e.To, e.Listener} {
			if name != "" && !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
	}
	return out
}

// huhText is the <error> text of a <huh> envelope ("" if it is none).
func huhText(env []byte) string { return coreChildText(env, "huh", "error") }

// coreChildText is the text of the first child named child of the first
// element of the core namespace named parent in env ("" for none).
func coreChildText(env []byte, parent, child string) string {
	d := xml.NewDecoder(bytes.NewReader(env))
	in := false
	for {
		tok, err := d.Token()
		if err != nil {
			return ""
		}
		if t, ok := tok.(xml.StartElement); ok {
			switch {
			case t.Name.Space == schemas.CoreNS && t.Name.Local == parent:
				in = true
			case in && t.Name.Local == child:
				var text string
				if err := d.DecodeElement(&text, &t); err != nil {
					return ""
				}
				return text
			}
		}
	}
}

// apiThreadMessages is GET /api/v1/threads/{id}/messages: the thread's
// journaled messages in order (?scope=conversation: every thread of its
// conversation), paginated; ?after=SEQ keeps those whose journal seq is
// above SEQ — the cursor of a client that follows the conversation: the
// journal is read from SEQ on, so a poll reads what is new, not the
// whole conversation again.
func (s *Server) apiThreadMessages(w http.ResponseWriter, r *http.Request, st *store.Store) {
	p, _, ok := requestPage(w, r, false)
	if !ok {
		return
	}
	after, ok := afterOf(w, r)
	if !ok {
		return
	}
	scope := r.URL.Query().Get("scope")
	if scope != "" && scope != "thread" && scope != "conversation" {
		writeError(w, http.StatusBadRequest, "Invalid scope: want thread or conversation")
		return
	}
	id := r.PathValue("id")
	sess := sessionOf(r.Context())
	conv, ok := s.threadConversation(w, sess, st, id)
	if !ok {
		return
	}
	// Without a profile every entry read is shown: the page's rows are the
	// first offset+limit read. A profile hides some: read them all.
	n := p.offset + p.limit
	if sess.Profile != "" {
		n = 0
	}
	of, keep := id, func(p store.Pruned) bool { return p.Thread == id }
	var (
		entries []store.Entry
		err     error
	)
	if scope == "conversation" && conv != "" {
		of, keep = conv, func(p store.Pruned) bool { return p.Conversation == conv }
		entries, err = st.ConversationAfter(conv, after, n)
	} else {
		entries, err = st.ThreadAfter(id, after, n)
	}
	if err != nil {
		s.internalError(w, "journal "+cmp.Or(scope, "thread"), err)
		return
	}
	pruned, err := st.PrunedOfAfter(of, after)
	if err != nil {
		s.internalError(w, "journal pruned entries", err)
		return
	}
	s.writeMessagesWith(w, r, sess, s.journalView(sess, st).positions(withPruned(entries, pruned, keep)), p,
		s.historyGoneOf(st, id, after))
}

// afterOf parses ?after= (a journal seq, 0 when absent); a bad value is
// answered 400 and ok is false.
func afterOf(w http.ResponseWriter, r *http.Request) (int64, bool) {
	v := r.URL.Query().Get("after")
	if v == "" {
		return 0, true
	}
	after, err := strconv.ParseInt(v, 10, 64)
	if err != nil || after < 0 {
		writeError(w, http.StatusBadRequest, "Invalid after: want a sequence number")
		return 0, false
	}
	return after, true
}

// apiMessages is GET /api/v1/messages: the newest journal entries first
// (limit, offset), or with ?after=SEQ the entries after that sequence number
// in order; ?thread=, ?agent= (sender, addressee or listener) and ?since=
// filter (agent and since look at the last 10 000 entries).
func (s *Server) apiMessages(w http.ResponseWriter, r *http.Request, st *store.Store) {
	p, since, ok := requestPage(w, r, true)
	if !ok {
		return
	}
	q := r.URL.Query()
	agent, thread := q.Get("agent"), q.Get("thread")
	sess := sessionOf(r.Context())
	filtered := agent != "" || !since.IsZero() || sess.Profile != ""
	var (
		entries []store.Position
		err     error
	)
	newestFirst := false
	switch {
	case q.Get("after") != "":
		after, ok := afterOf(w, r)
		if !ok {
			return
		}
		n := p.offset + p.limit
		if filtered || thread != "" {
			n = messageScan
		}
		entries, err = st.PositionsAfter(after, n)
	case thread != "":
		var (
			es     []store.Entry
			pruned []store.Pruned
		)
		if es, err = st.Thread(thread); err == nil {
			pruned, err = st.PrunedOf(thread)
		}
		entries = withPruned(es, pruned, func(p store.Pruned) bool { return p.Thread == thread })
		newestFirst = true
	default:
		n := p.offset + p.limit
		if filtered {
			n = messageScan
		}
		entries, err = st.TailPositions(n)
		newestFirst = true
	}
	if err != nil {
		s.internalError(w, "journal messages", err)
		return
	}
	if newestFirst {
		slices.Reverse(entries)
	}
	entries = slices.DeleteFunc(entries, func(e store.Position) bool {
		return (thread != "" && e.Thread != thread) || (agent != "" && e.From != agent && e.To != agent &&
			e.Listener != agent) || (!since.IsZero() && e.Time.Before(since))
	})
	s.writeMessages(w, r, sess, s.journalView(sess, st).positions(entries), p)
}
