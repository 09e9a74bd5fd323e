package llm

import (
	"strings"

	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// lateXMLAnswer reports whether an XML-mode message is a peer's answer that
// arrived after the agent's turn had ended with its answer to its caller:
// a reply that addressed several peers was answered by the model after the
// first answers, and the others come in afterwards. Only a peer's payload
// counts — a message from the caller begins a new turn, and an error (a
// refusal of that answer, say) is the agent's to hear.
func (a *Agent) lateXMLAnswer(st *turnState, payload any, de *xmlpipe.DeliveryError) bool {
	md := st.md
	if st.mode != XMLTools || payload == nil || de != nil || md.IsSelfCall || st.caller == "" ||
		strings.EqualFold(md.From, st.caller) || strings.EqualFold(md.From, a.Name) {
		return false
	}
	peer := false
	for _, p := range md.Peers {
		if strings.EqualFold(p.Name, md.From) {
			peer = true
			break
		}
	}
	if !peer {
		return false
	}
	for i := len(st.c.items) - 1; i >= 0; i-- {
		switch it := st.c.items[i]; it.kind {
		case itemReply:
			// The agent's latest step was text: an answer when it sent
			// nothing to a peer.
			return len(peerElements(string(it.slot.Raw), a.xmlTargets(md))) == 0
		case itemCalls, itemResult, itemFeedback, itemHalt:
			return false
		}
	}
	return false
}
