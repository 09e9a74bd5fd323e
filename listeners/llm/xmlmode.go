package llm

import (
	"bytes"
	"strings"

	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// xmlModeNote closes the usage instructions in XML mode: what counts as a
// message and what as the answer.
const xmlModeNote = "To send a message to a peer, write its payload element exactly as its schema above shows; " +
	"each such element in your reply goes to that peer, and its answer comes back to you. Everything else you " +
	"write — markup that names no peer's payload included — is your answer to your caller, passed on as written."

// xmlTargets are the payload root names an XML-mode reply may address: the
// peers' and the agent's own (self-iteration).
func (a *Agent) xmlTargets(md xmlpipe.Metadata) map[string]bool {
	t := map[string]bool{}
	for _, p := range md.Peers {
		if p.Payload != nil {
			t[p.Payload.Name()] = true
		}
	}
	if a.Lookup != nil {
		if pt, ok := a.Lookup(a.Name); ok {
			t[pt.Name()] = true
		}
	}
	return t
}

// peersNote names the peers an XML-mode agent may address and their
// payload elements.
func (a *Agent) peersNote(md xmlpipe.Metadata) string {
	if len(md.Peers) == 0 {
		return "You have no peers: answer your caller in plain text."
	}
	parts := make([]string, 0, len(md.Peers))
	for _, p := range md.Peers {
		if p.Payload == nil {
			parts = append(parts, p.Name+" (not available)")
			continue
		}
		parts = append(parts, p.Name+" (payload <"+p.Payload.Name()+">)")
	}
	return "Peers you may address: " + strings.Join(parts, ", ") + "."
}

// isNameByte reports whether c may continue an XML name (ASCII; other
// bytes of a UTF-8 name count too).
func isNameByte(c byte) bool {
	return c == '_' || c == '-' || c == '.' || c == ':' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' ||
		c >= '0' && c <= '9' || c >= 0x80
}

// tagAt reads the element name of a start tag at text[i] ('<'): the name,
// and whether it is complete (followed by a character that ends it). A
// prefix is dropped (p:Name is Name).
func tagAt(text string, i int) (name string, complete bool) {
	j := i + 1
	for j < len(text) && isNameByte(text[j]) {
		j++
	}
	name = text[i+1 : j]
	if k := strings.LastIndexByte(name, ':'); k >= 0 {
		name = name[k+1:]
	}
	return name, j < len(text)
}

// peerStart returns the index in text of the first start tag whose element
// names one of targets (-1: none), and the index from which text is not
// decided yet: a '<' whose name runs to the end of text may still become a
// peer's tag (len(text) when nothing is pending).
func peerStart(text string, targets map[string]bool) (start, undecided int) {
	for off := 0; ; {
		i := strings.IndexByte(text[off:], '<')
		if i < 0 {
			return -1, len(text)
		}
		i += off
		name, complete := tagAt(text, i)
		if !complete {
			return -1, i
		}
		if targets[name] {
			return i, len(text)
		}
		off = i + 1
	}
}

// peerElements returns the elements of an XML-mode reply whose root names
// one of targets, one per line, for the pump to split, repair and route
// (nil: none — the reply is the answer). Each runs from its start tag to
// its matching end tag (nested elements of the same name counted), or to
// its self-closing start tag's end, or — unclosed — to the end of the text.
// A start tag left unclosed with nothing after it (or never ended by its
// '>') is no element: a model that ends its prose with "<Calculate>" has
// answered, not asked; nor is one left unclosed with text after it, a
// payload's name in a sentence ("use the <Calculate> payload", "(payload
// <Calculate>)." quoted from a refusal's hint). Everything else in the
// reply, markup included, is not a message.
func peerElements(text string, targets map[string]bool) []byte {
	var out bytes.Buffer
	for i, sp := range peerSpans(text, targets) {
		if i > 0 {
			out.WriteByte('\n')
		}
		out.WriteString(text[sp[0]:sp[1]])
	}
	if out.Len() == 0 {
		return nil
	}
	return out.Bytes()
}

// peerSpans returns where peerElements' elements are in text, in order:
// [start, end) each.
func peerSpans(text string, targets map[string]bool) [][2]int {
	var spans [][2]int
	for off := 0; off < len(text); {
		i, _ := peerStart(text[off:], targets)
		if i < 0 {
			break
		}
		i += off
		name, _ := tagAt(text, i)
		end, empty := elementEnd(text, i, name)
		if empty {
			// Prose naming a payload: an element may still follow it.
			off = i + 1
			continue
		}
		spans = append(spans, [2]int{i, end})
		off = end
	}
	return spans
}

// elementEnd returns the end (exclusive) of the element name starting at
// text[i]; empty reports an element that is none: its start tag unclosed
// with no markup after it (nothing, white space or text: the name in a
// sentence), or never ended by its '>'.
func elementEnd(text string, i int, name string) (end int, empty bool) {
	gt := strings.IndexByte(text[i:], '>')
	if gt < 0 {
		return len(text), true
	}
	gt += i
	if text[gt-1] == '/' {
		return gt + 1, false
	}
	depth := 1
	for off := gt + 1; off < len(text); {
		j := strings.IndexByte(text[off:], '<')
		if j < 0 {
			break
		}
		j += off
		if strings.HasPrefix(text[j:], "</") {
			n, _ := tagAt(text, j+1)
			if n == name {
				depth--
				close := strings.IndexByte(text[j:], '>')
				if close < 0 {
					return len(text), false
				}
				if depth == 0 {
					return j + close + 1, false
				}
				off = j + close + 1
				continue
			}
		} else if n, complete := tagAt(text, j); complete && n == name {
			if k := strings.IndexByte(text[j:], '>'); k > 0 && text[j+k-1] != '/' {
				depth++
			}
		}
		off = j + 1
	}
	return len(text), !strings.HasPrefix(strings.TrimSpace(text[gt+1:]), "<")
}

// prose returns an XML-mode request's delta callback: it passes the text on
// up to the first element naming a peer (messages to peers are not shown),
// holding back a '<' until its name is known. When the router retries after
// a stream broke off (Delta.Restart), what was shown ends with restartNote
// and the new attempt's text streams anew from its start.
func (a *Agent) prose(thread string, targets map[string]bool) func(Delta) {
	var seen strings.Builder
	shown, stopped := 0, false
	return func(delta Delta) {
		if delta.Restart {
			// The attempt streamed so far is void: its text ends with a
			// note, and the next attempt is read from its start.
			if shown > 0 {
				a.OnDelta(a.Name, thread, restartNote, true)
			}
			seen.Reset()
			shown, stopped = 0, false
			return
		}
		d := delta.Text
		if stopped || d == "" {
			return
		}
		seen.WriteString(d)
		text := seen.String()
		var limit int
		start, undecided := peerStart(text, targets)
		if start >= 0 {
			limit, stopped = start, true
		} else {
			limit = undecided
		}
		if limit > shown {
			a.OnDelta(a.Name, thread, text[shown:limit], false)
			shown = limit
		}
	}
}
