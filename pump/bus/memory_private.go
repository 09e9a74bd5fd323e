package bus

import (
	"cmp"
	"encoding/xml"
	"strings"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/registry/store"
	"github.com/xml-pipeline/xmlpipe/schemas"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// withheldMemory is the Message model's withheld value of memory traffic
// its reader may not read (organism.MemoryReadable): the payload is "".
const withheldMemory = "memory"

// withheldMemoryText stands for the payload of memory traffic where a
// text is shown (the history console --connect reads).
const withheldMemoryText = "(withheld: what an agent asks to remember is shown to the conversation's owner and admins only)"

// memoryReader decides, for one reader, whether the memory traffic of a
// conversation is theirs to read (organism.MemoryReadable), reading each
// conversation's owner once.
type memoryReader struct {
	s      *Server
	sess   auth.Session
	owners map[string]bool
}

func (s *Server) memoryReader(sess auth.Session) *memoryReader {
	return &memoryReader{s: s, sess: sess, owners: map[string]bool{}}
}

// reads reports whether the reader may read the memory traffic of
// conversation conv. A conversation whose owner cannot be read is not.
func (r *memoryReader) reads(conv string) bool {
	admin := r.sess.Role.Allows(auth.Admin)
	if admin {
		return true
	}
	ok, seen := r.owners[conv]
	if !seen {
		owner, err := r.s.conversationOwner(conv)
		if err != nil {
			r.s.log.Warn("memory traffic: owner lookup failed; its text is withheld", "conversation", conv, "error", err)
		}
		ok = err == nil && organism.MemoryReadable(owner, r.sess.Username, admin)
		r.owners[conv] = ok
	}
	return ok
}

// withhold applies the rule to m, the Message model of journal entry e: a
// message, failure or refusal to or from the memory listener (or a <huh>
// quoting a memory request, organism.MessageCarriesMemory) that the
// reader may not read keeps its metadata (who, when, what kind) but not its
// payload, nor — save a refusal's, the governance's reasons — its
// diagnostics (a failure's may quote it). A decision record is never
// withheld: it says how the request ended, not what it held.
func (r *memoryReader) withhold(m *apiMessage, e store.Entry) {
	if e.Kind == store.Decision || !organism.MessageCarriesMemory(e.From, cmp.Or(e.Listener, e.To), e.Bytes) ||
		r.reads(cmp.Or(e.Conversation, e.Thread)) {
		return
	}
	m.Payload, m.Withheld = "", withheldMemory
	if e.Kind != store.Refusal { // a refusal's reasons are the governance's words
		m.Diagnostics = nil
	}
}

// memoryEvent is, for a pump event of memory traffic, who may read it
// (nil: the event is none, every reader reads it).
type memoryEvent struct {
	owner string
	known bool
}

// memoryEventOf reads the owner of e's conversation once, when e is
// memory traffic or a <huh> quoting a memory request.
func (s *Server) memoryEventOf(e pump.Event) *memoryEvent {
	huh, _ := e.Payload.(*xmlpipe.Huh)
	if !organism.MessageCarriesMemory(e.From, cmp.Or(e.Listener, e.To), e.Envelope) &&
		(huh == nil || !organism.IsMemoryRequest(huh.OriginalAttempt)) {
		return nil
	}
	owner, err := s.conversationOwner(cmp.Or(e.Conversation, e.Thread))
	if err != nil {
		s.log.Warn("memory traffic: owner lookup failed; its text is withheld", "thread", e.Thread, "error", err)
	}
	return &memoryEvent{owner: owner, known: err == nil}
}

// reads reports whether sess may read the event's memory text.
func (m *memoryEvent) reads(sess auth.Session) bool {
	admin := sess.Role.Allows(auth.Admin)
	return m == nil || admin || m.known && organism.MemoryReadable(m.owner, sess.Username, admin)
}

// historyPayloads are the payloads of the slots of history h of
// conversation conv as r may read them. A slot holding memory text
// (organism.HistoryCarriesMemory: memory traffic, a <huh> quoting a memory
// request, the agent loop's remember and recall calls and their results, a
// step a halt held with them) that r may not read reads withheldMemoryText,
// and so — in a history holding any — does an unfold of the history
// (organism.HistoryUnfolds), which may quote it; a decision record (a core
// <decision>) reads as it is. The context buffer's history holds the agent
// loop's records; the journal's only messages.
func (r *memoryReader) historyPayloads(conv string, h organism.History) []string {
	out := make([]string, len(h.Slots))
	var held, unfolds []int
	for i, sl := range h.Slots {
		out[i] = sl.Payload
		switch {
		case isDecisionRecord(sl.Payload):
		case organism.HistoryCarriesMemory(sl.From, sl.To, sl.PayloadType, []byte(sl.Payload)):
			held = append(held, i)
		case organism.HistoryUnfolds(sl.PayloadType, []byte(sl.Payload)):
			unfolds = append(unfolds, i)
		}
	}
	if len(held) == 0 || r.reads(conv) {
		return out
	}
	for _, i := range append(held, unfolds...) {
		out[i] = withheldMemoryText
	}
	return out
}

// isDecisionRecord reports whether payload is a governance decision record
// (a <decision> of the core namespace).
func isDecisionRecord(payload string) bool {
	d := xml.NewDecoder(strings.NewReader(payload))
	for {
		tok, err := d.Token()
		if err != nil {
			return false
		}
		if t, ok := tok.(xml.StartElement); ok {
			return t.Name.Space == schemas.CoreNS && t.Name.Local == "decision"
		}
	}
}

// contextMemory is, for one reader of an agent's context history, which
// of its segments hold memory text they may not read: the segments holding
// it (organism.HistoryCarriesMemory) and, in a history that holds any, the
// segments unfolding its parts (organism.HistoryUnfolds: the unfolded
// text, the list of folded parts with their summaries, and the librarian's
// summary of either may quote it).
type contextMemory struct {
	withheld map[int]bool // by segment index
}

// contextMemory decides, for r, the segments of conversation conv's
// history given with their slots.
func (r *memoryReader) contextMemory(conv string, segs []registry.Segment, slots [][]registry.Slot) contextMemory {
	cm := contextMemory{withheld: map[int]bool{}}
	var unfolds []int
	held := false
	for i, sg := range segs {
		for _, sl := range slots[i] {
			switch {
			case organism.HistoryCarriesMemory(sl.From, sl.To, sl.PayloadType, sl.Raw) && !isDecisionRecord(string(sl.Raw)):
				cm.withheld[sg.Index], held = true, true
			case organism.HistoryUnfolds(sl.PayloadType, sl.Raw):
				unfolds = append(unfolds, sg.Index)
			}
		}
	}
	if !held || r.reads(conv) {
		return contextMemory{}
	}
	for _, i := range unfolds {
		cm.withheld[i] = true
	}
	return cm
}

// withholds reports whether segment sg is withheld.
func (cm contextMemory) withholds(sg registry.Segment) bool { return cm.withheld[sg.Index] }
