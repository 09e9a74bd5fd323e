package aeiou

import (
	"crypto/sha256"
	"strings"
)

// Digest is the host-observed progress digest of one turn (§9):
//
//	sha256("OUT|" + output_body + "\nSCR|" + scratch_body)
//
// where each body is normalised: line endings made "\n" (CRLF and lone CR),
// trailing spaces and tabs trimmed from every line, lines that are exactly a
// control token (§7's TOKEN syntax, verified or not) dropped, and token-shaped
// text inside other lines removed — a fresh token every turn must not pass
// for progress, whatever the model wraps it in.
func Digest(output, scratch string) [32]byte {
	h := sha256.New()
	h.Write([]byte("OUT|"))
	h.Write([]byte(normaliseBody(output)))
	h.Write([]byte("\nSCR|"))
	h.Write([]byte(normaliseBody(scratch)))
	var d [32]byte
	h.Sum(d[:0])
	return d
}

func normaliseBody(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	lines := strings.Split(s, "\n")
	out := lines[:0]
	for _, l := range lines {
		l = strings.TrimRight(l, " \t")
		if IsTokenSyntax(l) {
			continue
		}
		if strings.Contains(l, TokenPrefix) {
			l = strings.TrimRight(stripTokens(l), " \t")
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

// stripTokens removes every token-syntax run from l.
func stripTokens(l string) string {
	var b strings.Builder
	for {
		i := strings.Index(l, TokenPrefix)
		if i < 0 {
			b.WriteString(l)
			return b.String()
		}
		j := strings.Index(l[i:], TokenSuffix)
		if j < 0 || !IsTokenSyntax(l[i:i+j+len(TokenSuffix)]) {
			b.WriteString(l[:i+len(TokenPrefix)])
			l = l[i+len(TokenPrefix):]
			continue
		}
		b.WriteString(l[:i])
		l = l[i+j+len(TokenSuffix):]
	}
}

// Progress is the mandatory progress guard of one session (§9): it counts
// how many turns in a row had the same digest. Not safe for concurrent use
// (a session has one turn in flight); Session guards it.
type Progress struct {
	limit int
	last  [32]byte
	run   int
}

// NewProgress returns a guard that trips when limit turns in a row (the
// current one included) have the same digest (limit < 2: the default 3).
func NewProgress(limit int) *Progress {
	if limit < 2 {
		limit = DefaultRepeatLimit
	}
	return &Progress{limit: limit}
}

// Observe records a turn's digest and returns how many turns in a row have
// had it and whether the guard trips (HALT(ERR_NO_PROGRESS)).
func (p *Progress) Observe(d [32]byte) (run int, halt bool) {
	if p.run > 0 && d == p.last {
		p.run++
	} else {
		p.last, p.run = d, 1
	}
	return p.run, p.run >= p.limit
}

// Reset forgets the history (after a human intervenes, say).
func (p *Progress) Reset() { p.run = 0 }
