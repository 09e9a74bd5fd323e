package llm

import (
	"strings"

	"github.com/xml-pipeline/xmlpipe/listeners/llm/aeiou"
)

// tokenFilter passes a loop-controlled answer's streamed text on without
// its token lines, as aeiou.StripTokens does to the delivered answer:
// a line that may still become a token — from its start, a prefix of the
// token mark, or the mark and no space — is held until its end tells, so a
// token split across the stream's pieces is never shown. Held text is
// bounded by a token's size.
type tokenFilter struct {
	emit func(string)
	// line is the held start of the current line; held says one is held,
	// mid that the current line is being passed on as it comes.
	line strings.Builder
	held bool
	mid  bool
}

// write takes the next piece of the stream.
func (f *tokenFilter) write(s string) {
	for s != "" {
		if f.mid {
			i := strings.IndexByte(s, '\n')
			if i < 0 {
				f.emit(s)
				return
			}
			f.emit(s[:i+1])
			s, f.mid = s[i+1:], false
			continue
		}
		f.held = true
		part := s
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			part = s[:i+1]
		}
		s = s[len(part):]
		f.line.WriteString(part)
		l := f.line.String()
		switch {
		case strings.HasSuffix(l, "\n"):
			if !aeiou.IsTokenSyntax(strings.TrimSuffix(strings.TrimSuffix(l, "\n"), "\r")) {
				f.emit(l)
			}
			f.reset()
		case !mayBecomeToken(l):
			f.emit(l)
			f.reset()
			f.mid = true
		}
	}
}

// end flushes what is held when the stream ends: shown unless it is a
// token.
func (f *tokenFilter) end() {
	if l := f.line.String(); f.held && l != "" && !aeiou.IsTokenSyntax(strings.TrimSuffix(l, "\r")) {
		f.emit(l)
	}
	f.reset()
}

// reset forgets the held line and begins at a line's start (also when the
// attempt streamed so far is void).
func (f *tokenFilter) reset() {
	f.line.Reset()
	f.held, f.mid = false, false
}

// mayBecomeToken reports whether an unfinished line could still turn out
// to be exactly a token.
func mayBecomeToken(l string) bool {
	l = strings.TrimSuffix(l, "\r")
	if len(l) <= len(aeiou.TokenPrefix) {
		return strings.HasPrefix(aeiou.TokenPrefix, l)
	}
	return strings.HasPrefix(l, aeiou.TokenPrefix) && len(l) <= aeiou.MaxTokenBytes &&
		!strings.ContainsAny(l, " \t\r")
}
