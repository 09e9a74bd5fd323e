package console

import (
	"strings"
	"sync"
)

// streamKey names one agent's stream in one conversation.
type streamKey struct{ conv, agent string }

// streamState is what an agent's stream has shown in the current turn.
type streamState struct {
	partial strings.Builder // text after the last line shown
	shown   strings.Builder // the lines shown, each ending in "\n"
	ended   bool            // the turn's reply is complete
}

// streams shows LLM agents' text line by line as it arrives; the agent's
// answer then shows only what the stream has not.
type streams struct {
	mu sync.Mutex
	m  map[streamKey]*streamState
}

// Stream is a catalog.Env.Stream: it shows each complete line of an agent's
// streamed text as "[agent] line".
func (l *Local) Stream(thread, agent, delta string, end bool) {
	var conv string
	if l.org != nil && thread != "" {
		conv = l.org.Pump.Threads().Root(thread)
	}
	k := streamKey{conv, agent}
	var lines []string
	l.streams.mu.Lock()
	if l.streams.m == nil {
		l.streams.m = map[streamKey]*streamState{}
	}
	st := l.streams.m[k]
	if st == nil {
		st = &streamState{}
		l.streams.m[k] = st
	}
	if st.ended && delta != "" {
		// The previous turn ended without answering (it sent messages):
		// its last prose line is complete.
		if p := strings.TrimSpace(st.partial.String()); p != "" {
			lines = append(lines, p)
		}
		*st = streamState{}
	}
	if end {
		st.ended = true
	}
	st.partial.WriteString(delta)
	for {
		text := st.partial.String()
		i := strings.IndexByte(text, '\n')
		if i < 0 {
			break
		}
		lines = append(lines, text[:i])
		st.shown.WriteString(text[:i+1])
		st.partial.Reset()
		st.partial.WriteString(text[i+1:])
	}
	l.streams.mu.Unlock()
	for _, line := range lines {
		l.publish(Output{Kind: OutputPrint, Conversation: conv, From: agent, Text: line})
	}
}

// answered returns what is left to show of an agent's answer text once its
// stream has shown its first lines, and forgets the stream.
func (l *Local) answered(conv, agent, text string) string {
	l.streams.mu.Lock()
	defer l.streams.mu.Unlock()
	k := streamKey{conv, agent}
	st := l.streams.m[k]
	if st == nil {
		return text
	}
	delete(l.streams.m, k)
	if rest, ok := strings.CutPrefix(text, st.shown.String()); ok {
		return rest
	}
	return text
}

// forget drops the streams of a finished conversation.
func (l *Local) forget(conv string) {
	l.streams.mu.Lock()
	defer l.streams.mu.Unlock()
	for k := range l.streams.m {
		if k.conv == conv {
			delete(l.streams.m, k)
		}
	}
}
