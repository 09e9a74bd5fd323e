package llm

import (
	"encoding/xml"
	"fmt"
	"strconv"
	"strings"

	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// In XML mode (XMLTools) the model has no functions: it reaches its peers by
// writing their payload elements. With a librarian it reads a folded or
// evicted part of its conversation the same way, writing the element
//
//	<ContextUnfold><Id>s12</Id></ContextUnfold>
//
// (<Offset>N</Offset> added to read a long part on from byte N;
// <ContextUnfold/> lists the folded and evicted parts). The loop answers it
// itself, as it answers context_unfold in native mode: the answer is kept
// in the conversation as a note (unfoldedType) and the model is asked
// again — after the peers' answers, when the same reply also addressed
// peers. The folded notes and the eviction note say how, in this form.

// unfoldElement is the element an XML-mode model writes to unfold.
const unfoldElement = "ContextUnfold"

// unfoldListElement lists the folded and evicted parts in XML mode.
const unfoldListElement = "<" + unfoldElement + "/>"

// unfoldedType records the answer to an XML-mode unfold request (Raw: the
// text the model reads): a note, whose unfolded segment the librarian keeps
// in sight for the rest of the turn.
const unfoldedType = "llm.unfolded"

// xmlUnfoldNote tells an XML-mode model with a librarian how to unfold.
const xmlUnfoldNote = "Parts of this conversation may be folded (a note with the part's id and a summary stands " +
	"in for it) or evicted (listed by id). To read one in full, write <" + unfoldElement + "><Id>s12</Id></" +
	unfoldElement + "> with its id in your reply (add <Offset>N</Offset> to read a long part on from byte N); " +
	unfoldListElement + " lists them. It is answered before you answer your caller; it is not a message to anyone."

// unfoldSyntax is how the model asks to unfold in its tool calling mode:
// false native (the context_unfold function), true XML (the element).
type unfoldSyntax bool

// xml reports whether the model writes the element.
func (u unfoldSyntax) xml() bool { return bool(u) }

// name names the means: the function or the element.
func (u unfoldSyntax) name() string {
	if u {
		return "<" + unfoldElement + ">"
	}
	return unfoldTool
}

// read is how to read segment id: `call context_unfold("s12")` or the
// element.
func (u unfoldSyntax) read(id string) string {
	if u {
		return "write <" + unfoldElement + "><Id>" + id + "</Id></" + unfoldElement + ">"
	}
	return "call " + unfoldTool + "(\"" + id + "\")"
}

// readLen is len(read(id)) without building it.
func (u unfoldSyntax) readLen(id string) int {
	if u {
		return len("write <><Id></Id></>") + 2*len(unfoldElement) + len(id)
	}
	return len("call (\"\")") + len(unfoldTool) + len(id)
}

// readOn is how to read segment id on from offset.
func (u unfoldSyntax) readOn(id string, offset int) string {
	if u {
		return fmt.Sprintf("write <%s><Id>%s</Id><Offset>%d</Offset></%s>", unfoldElement, id, offset, unfoldElement)
	}
	return fmt.Sprintf("call %s with {\"id\":%q,\"offset\":%d}", unfoldTool, id, offset)
}

// list is how to list the folded and evicted segments.
func (u unfoldSyntax) list() string {
	if u {
		return "write " + unfoldListElement
	}
	return "call " + unfoldTool + " with no id"
}

// unfoldRequest is one <ContextUnfold> element of an XML-mode reply.
type unfoldRequest struct {
	ID     string `xml:"Id"`
	Offset string `xml:"Offset"`
}

// curates reports whether the librarian curates the turn's context: the
// agent has one, and the history is one thread's (turnState.spread).
func (a *Agent) curates(st *turnState) bool { return a.Librarian != nil && !st.spread }

// xmlUnfolds reports whether an XML-mode agent's replies are read for
// <ContextUnfold>: it has a librarian, and no peer takes that element.
func (a *Agent) xmlUnfolds(targets map[string]bool) bool {
	return a.Librarian != nil && !targets[unfoldElement]
}

// xmlStops are the elements of an XML-mode reply not shown as prose while
// it streams: the peers' payloads, and <ContextUnfold> when it is read.
func (a *Agent) xmlStops(md xmlpipe.Metadata) map[string]bool {
	t := a.xmlTargets(md)
	if a.xmlUnfolds(t) {
		t[unfoldElement] = true
	}
	return t
}

// answerUnfolds answers the <ContextUnfold> elements of an XML-mode reply,
// recording each answer as a note; it reports how many there were.
func (a *Agent) answerUnfolds(st *turnState, text string) int {
	spans := peerSpans(text, map[string]bool{unfoldElement: true})
	for _, sp := range spans {
		a.record(st, registry.Slot{PayloadType: unfoldedType, Raw: []byte(a.xmlUnfold(st.session, text[sp[0]:sp[1]]))})
	}
	return len(spans)
}

// xmlUnfold answers one <ContextUnfold> element: the part, the list, or
// what was wrong, in words the model can act on.
func (a *Agent) xmlUnfold(thread, elem string) string {
	how := unfoldSyntax(true)
	var req unfoldRequest
	if err := xml.Unmarshal([]byte(elem), &req); err != nil {
		return fmt.Sprintf("Your <%s> could not be read (%v): write %s.", unfoldElement, err, how.read("s12"))
	}
	offset := 0
	if o := strings.TrimSpace(req.Offset); o != "" {
		n, err := strconv.Atoi(o)
		if err != nil || n < 0 {
			return fmt.Sprintf("<%s>: the offset %q is not a byte offset (a whole number, 0 or more).", unfoldElement, o)
		}
		offset = n
	}
	text, err := a.unfold(thread, strings.TrimSpace(req.ID), offset, how)
	if err != nil {
		return fmt.Sprintf("<%s> failed: %v.", unfoldElement, strings.TrimSuffix(err.Error(), "."))
	}
	return text
}

// unfoldedID is the segment an unfold answer gave in full ("" for a list or
// a failure).
func unfoldedID(text string) string {
	rest, ok := strings.CutPrefix(text, unfoldedPrefix)
	if !ok {
		return ""
	}
	id, _, _ := strings.Cut(rest, " ")
	if _, ok := registry.ParseSegmentID(id); !ok {
		return ""
	}
	return id
}
