package organism

import (
	"fmt"

	"github.com/xml-pipeline/xmlpipe/pump"
)

// ThreadOrigin implements pump.ThreadHistory: whether thread was ever
// journaled and, if so, the sender of the first entry of its conversation's
// root thread (the message that began the conversation). A thread whose root
// left no entry is seen with no origin. A thread id the store's filter says
// was never journaled (store.Store.MayHaveThread: a fresh id a client chose
// for a new conversation) is answered from memory; any other reads the
// journal's lookup keys (store.Reader.Thread, once or twice). The pump asks
// only about thread ids a client chose that are not live.
func (j storeJournal) ThreadOrigin(thread string) (origin string, seen bool, err error) {
	if !j.s.MayHaveThread(thread) { // never journaled: no need to read the journal
		return "", false, nil
	}
	es, err := j.s.Thread(thread)
	if err != nil {
		return "", false, fmt.Errorf("organism: thread origin %s: %w", thread, err)
	}
	if len(es) == 0 {
		return "", false, nil
	}
	if root := es[0].Conversation; root != "" && root != thread {
		if es, err = j.s.Thread(root); err != nil {
			return "", true, fmt.Errorf("organism: thread origin %s: root %s: %w", thread, root, err)
		}
		if len(es) == 0 {
			return "", true, nil
		}
	}
	return es[0].From, true, nil
}

var _ pump.ThreadHistory = storeJournal{}
