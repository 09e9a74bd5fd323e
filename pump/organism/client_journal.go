package organism

import (
	"cmp"
	"slices"
	"time"

	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// recentConversations is how many journaled conversations /threads and
// /monitor * show for a durable organism.
const recentConversations = 20

// journalThreads returns live (the live threads, oldest first) preceded by
// the journal's recent conversations that are not live, marked Ended,
// oldest first.
func journalThreads(r *store.Reader, live []Thread, now time.Time) ([]Thread, error) {
	convs, err := r.Conversations(recentConversations, 0, store.ThreadFilter{})
	if err != nil {
		return nil, err
	}
	isLive := make(map[string]bool, len(live))
	for _, t := range live {
		isLive[t.ID] = true
	}
	var out []Thread
	for _, c := range slices.Backward(convs) { // most recent first → oldest first
		if isLive[c.ID] {
			continue
		}
		out = append(out, Thread{ID: c.ID, Ended: true, Slots: int(c.Messages), Idle: max(now.Sub(c.Last), 0),
			LastFrom: c.LastFrom, LastTo: c.LastTo})
	}
	return append(out, live...), nil
}

// journalMonitor returns the journaled history of the conversations and
// threads whose id starts with prefix (a conversation shows all its
// threads), or of the recent conversations for "*", oldest first.
func journalMonitor(r *store.Reader, prefix string) ([]History, error) {
	var sums []store.ThreadSummary
	if prefix == "*" {
		convs, err := r.Conversations(recentConversations, 0, store.ThreadFilter{})
		if err != nil {
			return nil, err
		}
		sums = convs
	} else {
		convs, err := r.Conversations(0, 0, store.ThreadFilter{IDPrefix: prefix})
		if err != nil {
			return nil, err
		}
		threads, err := r.Threads(0, 0, store.ThreadFilter{IDPrefix: prefix})
		if err != nil {
			return nil, err
		}
		sums = append(convs, threads...)
	}
	slices.SortStableFunc(sums, func(a, b store.ThreadSummary) int {
		return cmp.Or(a.First.Compare(b.First), cmp.Compare(a.ID, b.ID))
	})
	var out []History
	seen := map[string]bool{}
	for _, s := range sums {
		if seen[s.ID] {
			continue // a conversation's root thread: shown as the conversation
		}
		seen[s.ID] = true
		entries, err := r.Conversation(s.ID)
		if err != nil {
			return nil, err
		}
		if len(entries) == 0 {
			if entries, err = r.Thread(s.ID); err != nil {
				return nil, err
			}
		}
		h := History{ID: s.ID}
		for _, e := range entries {
			h.Slots = append(h.Slots, Slot{From: e.From, To: e.To, PayloadType: payloadLabel(e),
				Payload: journalPayload(e.Bytes), Time: e.Time})
		}
		out = append(out, h)
	}
	return out, nil
}

// payloadLabel is an entry's payload tag, prefixed with its kind unless it
// is an ordinary message ("huh", "dead-letter Greeting").
func payloadLabel(e store.Entry) string {
	if e.Kind == store.Message {
		return e.PayloadTag
	}
	if e.PayloadTag == "" {
		return e.Kind.String()
	}
	return e.Kind.String() + " " + e.PayloadTag
}

// journalPayload is the payload of a journaled envelope as the context
// buffer holds it: without the xmlns="" a payload in no namespace carries
// only inside the envelope.
func journalPayload(env []byte) string {
	return string(barePayload(payloadOf(env)))
}
