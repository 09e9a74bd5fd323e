package console

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// streamKey names one agent's stream in one conversation.
type streamKey struct{ conv, agent string }

// liveStream is what an agent's stream has shown in its current turn.
type liveStream struct {
	// shown is the text of the complete lines shown, each with its "\n";
	// partial the text after the last one, shown live above the prompt.
	shown   strings.Builder
	partial string
	// ended: the model's reply is complete; a later delta begins a new turn.
	ended bool
}

// liveStreams renders agents' streamed text on a terminal: complete lines
// print as lines ("[agent] " before the first of a turn), the unfinished
// one stays live just above the prompt and grows as text arrives. The
// agent's answer then prints only what its stream did not show (all of it
// when the two differ), and a turn that ended without an answer to the
// console (its text went to a peer) keeps its last line.
type liveStreams struct {
	out *outbox
	mu  sync.Mutex
	m   map[streamKey]*liveStream
}

func newLiveStreams(out *outbox) *liveStreams {
	return &liveStreams{out: out, m: map[streamKey]*liveStream{}}
}

// id is the outbox's name of a stream's live line.
func (k streamKey) id() string { return k.conv + "\x00" + k.agent }

// delta shows a piece of agent's text in conv.
func (ls *liveStreams) delta(conv, agent, text string, end bool) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	k := streamKey{conv, agent}
	st := ls.m[k]
	if st == nil {
		st = &liveStream{}
		ls.m[k] = st
	}
	if st.ended && text != "" {
		// The previous turn ended without answering the console: its last
		// line stays as it is.
		ls.commit(k, st)
		*st = liveStream{}
	}
	st.ended = st.ended || end
	st.partial += text
	for {
		i := strings.IndexByte(st.partial, '\n')
		if i < 0 {
			break
		}
		line := st.partial[:i]
		ls.out.line(ls.prefix(k, st) + printable(line))
		st.shown.WriteString(line + "\n")
		st.partial = st.partial[i+1:]
	}
	ls.show(k, st)
}

// prefix is "[agent] " before a turn's first line, "" after.
func (ls *liveStreams) prefix(k streamKey, st *liveStream) string {
	if st.shown.Len() > 0 {
		return ""
	}
	return "[" + k.agent + "] "
}

// show puts the stream's unfinished line live (or clears it).
func (ls *liveStreams) show(k streamKey, st *liveStream) {
	if st.partial == "" {
		ls.out.live(k.id(), "")
		return
	}
	ls.out.live(k.id(), ls.prefix(k, st)+printable(st.partial))
}

// commit prints the stream's unfinished line as a line and clears it.
// Callers hold ls.mu.
func (ls *liveStreams) commit(k streamKey, st *liveStream) {
	if st.partial != "" {
		ls.out.line(ls.prefix(k, st) + printable(st.partial))
		st.shown.WriteString(st.partial)
		st.partial = ""
	}
	ls.out.live(k.id(), "")
}

// reply prints agent's answer text in conv (or its interim text): what its
// stream did not show. The line breaks a stream showed after the text's
// end (an answer's trailing token lines were stripped) add nothing.
func (ls *liveStreams) reply(conv, agent, text string) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	k := streamKey{conv, agent}
	st := ls.m[k]
	if st == nil {
		ls.out.line("[" + agent + "] " + text)
		return
	}
	delete(ls.m, k)
	ls.out.live(k.id(), "")
	shown := st.shown.String()
	rest, ok := strings.CutPrefix(text, shown)
	if !ok && text == strings.TrimRight(shown, "\r\n") {
		rest, ok = "", true
	}
	switch {
	case !ok:
		ls.out.line("[" + agent + "] " + text)
	case shown == "":
		ls.out.line("[" + agent + "] " + rest)
	case rest != "":
		ls.out.line(rest)
	}
}

// freeze leaves the unfinished lines on the screen as they are (the user
// entered a line below them): they count as shown, and text that continues
// them starts a new line.
func (ls *liveStreams) freeze() {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	for _, st := range ls.m {
		st.shown.WriteString(st.partial)
		st.partial = ""
	}
	ls.out.freeze()
}

// complete keeps the last lines of conv's streams (turns that answered a
// peer, not the console) and forgets them.
func (ls *liveStreams) complete(conv string) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	for k, st := range ls.m {
		if k.conv == conv {
			ls.commit(k, st)
			delete(ls.m, k)
		}
	}
}

// printable replaces what would move the terminal's cursor or change its
// state (control characters, escape sequences) in streamed text, which the
// live line is measured in columns for; tabs become a space.
func printable(s string) string {
	clean := true
	for _, r := range s {
		if r == '\t' || unicode.IsControl(r) || r == utf8.RuneError {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t':
			return ' '
		case unicode.IsControl(r):
			return '\uFFFD'
		}
		return r
	}, s)
}
