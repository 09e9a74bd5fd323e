package bus

import (
	"strings"

	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// streamKey names one agent's stream in one conversation.
type streamKey struct{ conv, agent string }

// shownStream is the text a socket's delta frames carried in an agent's
// current stream (one model reply), and whether that stream has ended.
type shownStream struct {
	text  strings.Builder
	ended bool
}

// shownStreams tracks, for one /ws socket, the text its delta frames
// carried in each agent's current stream, so that the reply or output
// frame that then repeats it can say so ("streamed": true) and a client
// that rendered the deltas shows the text once. A stream's text is
// forgotten once a frame matched it, when the next stream of the agent
// begins, and when its conversation completes. The zero value is ready;
// the socket's mu guards it.
type shownStreams struct {
	m map[streamKey]*shownStream
}

// delta records a piece of streamed text queued for the client: after an
// ended stream, text begins the agent's next stream (a model reply cut off
// and asked again ends with a note, and the new reply streams anew).
func (s *shownStreams) delta(o organism.Output) {
	k := streamKey{o.Conversation, o.From}
	st := s.m[k]
	if st == nil {
		if o.Text == "" {
			return // an end with no text shown: nothing to match
		}
		if s.m == nil {
			s.m = map[streamKey]*shownStream{}
		}
		st = &shownStream{}
		s.m[k] = st
	}
	if st.ended && o.Text != "" {
		st.text.Reset()
		st.ended = false
	}
	st.text.WriteString(o.Text)
	st.ended = st.ended || o.End
}

// take reports whether text, which agent said in conv (its answer or its
// interim text), is what the agent's stream already showed the client —
// the line breaks a stream showed after the text's end aside (an answer's
// trailing loop-control token lines are stripped) — and forgets the stream.
func (s *shownStreams) take(conv, agent, text string) bool {
	k := streamKey{conv, agent}
	st := s.m[k]
	if st == nil {
		return false
	}
	delete(s.m, k)
	shown := st.text.String()
	return text != "" && (text == shown || text == strings.TrimRight(shown, "\r\n"))
}

// forget drops the streams of conv (it completed, or its send failed).
func (s *shownStreams) forget(conv string) {
	for k := range s.m {
		if k.conv == conv {
			delete(s.m, k)
		}
	}
}
