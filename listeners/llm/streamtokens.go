package llm

import (
	"strings"

	"github.com/xml-pipeline/xmlpipe/listeners/llm/aeiou"
)

// tokenFilter passes a loop-controlled answer's streamed text on without
// its tokens, as aeiou.StripTokens does to the delivered answer (its
// aeiou.Stripper, line by line): the text of a line is passed on as it
// comes up to where a token may begin — the token mark, or a prefix of it
// at the text's end — less the spaces before it, and the rest of that line
// is held until the line's end tells what stays of it. So a token split
// across the stream's pieces, alone on its line or at a line's edge, is
// never shown, and what is shown is always the start of the answer.
type tokenFilter struct {
	emit func(string)
	// line is the current line so far (without its "\n"), sent how much of
	// it was passed on; lines strips the finished lines.
	line  strings.Builder
	sent  int
	lines aeiou.Stripper
}

// write takes the next piece of the stream.
func (f *tokenFilter) write(s string) {
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			f.line.WriteString(s)
			f.pass()
			return
		}
		f.line.WriteString(s[:i])
		f.finish("\n")
		s = s[i+1:]
	}
}

// pass passes on the current line's text up to where a token may begin.
func (f *tokenFilter) pass() {
	l := f.line.String()
	safe := len(strings.TrimRight(l[:mayBeginToken(l)], " \t\r"))
	if safe > f.sent {
		f.emit(l[f.sent:safe])
		f.sent = safe
	}
}

// finish ends the current line with nl ("\n", or "" at the stream's end):
// what stays of it after what was passed on is shown.
func (f *tokenFilter) finish(nl string) {
	l := f.line.String()
	if out, keep := f.lines.Line(l); keep {
		if rest := out[min(f.sent, len(out)):] + nl; rest != "" {
			f.emit(rest)
		}
	}
	f.line.Reset()
	f.sent = 0
}

// end flushes what is held when the stream ends: shown unless it is a
// token.
func (f *tokenFilter) end() {
	if f.line.Len() > 0 {
		f.finish("")
	}
	f.reset()
}

// reset forgets the current line and the code blocks, and begins at the
// answer's start (also when the attempt streamed so far is void).
func (f *tokenFilter) reset() {
	f.line.Reset()
	f.sent = 0
	f.lines = aeiou.Stripper{}
}

// mayBeginToken is where in l a token may begin: the first token prefix,
// else a prefix of one at l's end, else len(l).
func mayBeginToken(l string) int {
	if i := strings.Index(l, aeiou.TokenPrefix); i >= 0 {
		return i
	}
	for i := max(0, len(l)-len(aeiou.TokenPrefix)+1); i < len(l); i++ {
		if strings.HasPrefix(aeiou.TokenPrefix, l[i:]) {
			return i
		}
	}
	return len(l)
}
