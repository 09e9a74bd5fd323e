package organism

import (
	"bytes"
	"encoding/base64"
	"encoding/xml"
	"slices"
	"strings"

	"github.com/xml-pipeline/xmlpipe/listeners/llm"
	"github.com/xml-pipeline/xmlpipe/listeners/memory"
	"github.com/xml-pipeline/xmlpipe/schemas"
)

// MemoryListener is the organism's memory listener: remember sends what an
// agent asks to remember there, and its answers say what was stored.
const MemoryListener = memory.ListenerName

// CarriesMemory reports whether a message from from to to is memory
// traffic: what an agent asks to remember (a Remember message to the
// memory listener) or the memory listener's answer about it. Its payload
// is the conversation's user's (MemoryReadable).
func CarriesMemory(from, to string) bool {
	return strings.EqualFold(to, MemoryListener) || strings.EqualFold(from, MemoryListener)
}

// MessageCarriesMemory reports whether a message from from to to, raw its
// envelope or payload, holds memory text: memory traffic (CarriesMemory),
// or a <huh> telling its sender that a memory request failed, whose
// original attempt is that request (HuhCarriesMemory).
func MessageCarriesMemory(from, to string, raw []byte) bool {
	return CarriesMemory(from, to) || HuhCarriesMemory(raw)
}

// HuhCarriesMemory reports whether raw, an envelope or payload, holds a
// <huh> of the core namespace whose original attempt — the bytes that
// failed, base64 — is a memory request (a Remember payload): the pump
// answers a memory listener's failure to the agent that asked with such a
// <huh>, quoting what it asked to remember.
func HuhCarriesMemory(raw []byte) bool {
	if !bytes.Contains(raw, []byte("original-attempt")) {
		return false
	}
	d := xml.NewDecoder(bytes.NewReader(raw))
	in := false
	for {
		tok, err := d.Token()
		if err != nil {
			return false
		}
		t, ok := tok.(xml.StartElement)
		switch {
		case !ok:
		case t.Name.Space == schemas.CoreNS && t.Name.Local == "huh":
			in = true
		case in && t.Name.Local == "original-attempt":
			var text string
			if err := d.DecodeElement(&text, &t); err != nil {
				return false
			}
			attempt, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(text), ""))
			if err != nil {
				attempt = []byte(text)
			}
			return IsMemoryRequest(attempt)
		}
	}
}

// IsMemoryRequest reports whether attempt, the bytes of a failed message
// (a <huh>'s original attempt), is a memory request: the memory listener's
// payload, alone or in an envelope. An attempt cut short still names its
// root.
func IsMemoryRequest(attempt []byte) bool {
	pt := memory.RememberType()
	d := xml.NewDecoder(bytes.NewReader(attempt))
	for {
		tok, err := d.Token()
		if err != nil {
			return false
		}
		t, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		if t.Name.Local == pt.Name() && (t.Name.Space == pt.Namespace() || t.Name.Space == schemas.EnvelopeNS) {
			return true // (a payload that lost its xmlns="" inside an envelope: withheld rather than shown)
		}
		if t.Name.Space != schemas.EnvelopeNS {
			return false // the payload's root, of another type
		}
	}
}

// MemoryReadable reports whether user (an admin when admin) may read what
// an agent asked to remember in a conversation owner began: an admin
// always; anyone else only in a conversation of their own — none in the
// organism's own traffic, which no user began. Every surface that shows a
// memory request (its approval, its message, the history holding it)
// follows this rule; to anyone else it shows that the request happened,
// not what it holds.
func MemoryReadable(owner, user string, admin bool) bool {
	return admin || owner != "" && owner == user
}

// HistoryCarriesMemory reports whether a slot of an agent's context
// history — from from to to, of payload type payloadType, raw its
// content — holds memory text: memory traffic or a <huh> quoting a memory
// request (MessageCarriesMemory), an
// assistant message calling remember or recall, or such a call's result
// (what recall returns is the stored memories). A record of the agent
// loop that cannot be read is taken to hold it (withheld rather than shown).
func HistoryCarriesMemory(from, to, payloadType string, raw []byte) bool {
	if MessageCarriesMemory(from, to, raw) {
		return true
	}
	tools, ok, err := llm.HistoryTools(payloadType, raw)
	if !ok {
		return false
	}
	if err != nil {
		return true
	}
	return slices.ContainsFunc(tools, isMemoryTool)
}

// HistoryUnfolds reports whether a slot of an agent's context history, of
// payload type payloadType and content raw, is an unfold of its history
// (the context_unfold call, its result, an XML-mode unfold's answer),
// which quotes the parts it unfolds or lists: in a history that holds
// memory text it may hold it too (HistoryCarriesMemory). A record that
// cannot be read is taken to be one.
func HistoryUnfolds(payloadType string, raw []byte) bool {
	tools, ok, err := llm.HistoryTools(payloadType, raw)
	return ok && (err != nil || slices.Contains(tools, llm.UnfoldTool))
}

// isMemoryTool reports whether name is one of the memory tools.
func isMemoryTool(name string) bool {
	return name == memory.RememberTool || name == memory.RecallTool
}
