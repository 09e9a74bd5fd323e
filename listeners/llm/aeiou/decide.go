package aeiou

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Lint is a non-fatal finding, logged and counted (§3.2, §5.3, §10).
type Lint string

// The lints.
const (
	// LintPostTokenText: text follows the chosen token in the output; the
	// decision stands.
	LintPostTokenText Lint = "LINT_POST_TOKEN_TEXT"
	// LintMultiTokens: more than one valid token in the output; precedence
	// and last-wins chose one.
	LintMultiTokens Lint = "LINT_MULTI_TOKENS"
	// LintDuplicateSection: an envelope section appeared again; the first
	// was used.
	LintDuplicateSection Lint = "LINT_DUPLICATE_SECTION"
)

// Halt codes (§8, §9, §11.4).
const (
	// ErrCodeTokenMissing: no valid token in the turn's output.
	ErrCodeTokenMissing = "ERR_TOKEN_MISSING"
	// ErrCodeNoProgress: the progress guard tripped.
	ErrCodeNoProgress = "ERR_NO_PROGRESS"
	// ErrCodeMagicInternal: the magic tool could mint nothing
	// (ErrMagicInternal); the host halts and never injects a token.
	ErrCodeMagicInternal = "ERR_MAGIC_TOOL_INTERNAL"
)

// Outcome is a turn's decision.
type Outcome int

// The outcomes.
const (
	// OutcomeContinue: a valid continue token decided; run another turn.
	OutcomeContinue Outcome = iota + 1
	// OutcomeDone: a valid done token decided; the answer is final.
	OutcomeDone
	// OutcomeAbort: a valid abort token decided; stop.
	OutcomeAbort
	// OutcomeMissing: no valid token (HALT(ERR_TOKEN_MISSING)).
	OutcomeMissing
	// OutcomeNoProgress: a continue the progress guard overruled
	// (HALT(ERR_NO_PROGRESS)).
	OutcomeNoProgress
)

// String returns the log's decision value: continue, done, abort or halt.
func (o Outcome) String() string {
	switch o {
	case OutcomeContinue:
		return "continue"
	case OutcomeDone:
		return "done"
	case OutcomeAbort:
		return "abort"
	case OutcomeMissing, OutcomeNoProgress:
		return "halt"
	}
	return "unknown"
}

// HaltCode returns the halt's code (ERR_TOKEN_MISSING, ERR_NO_PROGRESS), or
// "" for a token decision.
func (o Outcome) HaltCode() string {
	switch o {
	case OutcomeMissing:
		return ErrCodeTokenMissing
	case OutcomeNoProgress:
		return ErrCodeNoProgress
	}
	return ""
}

func outcomeOf(a Action) Outcome {
	switch a {
	case ActionContinue:
		return OutcomeContinue
	case ActionDone:
		return OutcomeDone
	}
	return OutcomeAbort
}

// Candidate is a line of the output that holds something token-like.
type Candidate struct {
	// Line is the 1-based line number in the output.
	Line int
	// Claims are the token's, when it verified.
	Claims Claims
	// Reason is why it was ignored ("" when it verified); Err has detail.
	Reason Reason
	Err    error
}

// Decision is the result of a turn.
type Decision struct {
	Outcome Outcome
	// Token is the deciding token's claims (nil when none decided) and
	// Line its line.
	Token *Claims
	Line  int
	// Valid are the verified tokens in output order; Rejected the ignored
	// candidates, each with its reason.
	Valid    []Candidate
	Rejected []Candidate
	// Lints raised by the output.
	Lints []Lint
	// Digest is the §9 progress digest of the turn, and Repeats how many
	// turns in a row (this one included) had it (set by Session.Decide).
	Digest  [32]byte
	Repeats int
	// Record is the §10 log entry (set by Session.Decide).
	Record Record
}

// tokenMark is what makes a line a candidate worth counting.
const tokenMark = "<<<NSMAG"

// MaxCandidates bounds how many bare token lines of one output are
// verified; later ones are rejected with ReasonTooMany. A well-behaved
// answer holds one.
const MaxCandidates = 64

// Decide scans the current turn's output (only that: never USERDATA,
// SCRATCHPAD or earlier turns, §5.4) and decides (§5.3, §8):
//   - a candidate is a line that is exactly a token (after a trailing "\r");
//     a token-like text that is quoted, backticked, in a code fence, embedded
//     in a line or split across lines is ignored with its reason;
//   - each candidate is verified (format, kind, signature, binding to turn,
//     TTL); among those that verify, abort > done > continue, and the last
//     wins among equals;
//   - every verified jti is then recorded in the replay cache (so a token
//     decides one turn once; a second copy in the same output is a
//     jti_replayed rejection);
//   - LINT_MULTI_TOKENS when more than one token verified,
//     LINT_POST_TOKEN_TEXT when non-blank text follows the chosen token;
//   - no valid token is OutcomeMissing.
//
// Decide neither logs nor observes; Session.Decide does both and applies the
// progress guard.
func (v *Verifier) Decide(turn Turn, output string) Decision {
	now := v.now()
	var d Decision
	var fence codeFence
	checked := 0
	lines := strings.Split(output, "\n")
	for i, line := range lines {
		line = strings.TrimSuffix(line, "\r")
		inFence := fence.step(line)
		if !strings.Contains(line, tokenMark) {
			continue
		}
		c := Candidate{Line: i + 1}
		switch {
		case inFence:
			c.Reason = ReasonFenced
		case isBareToken(line) && checked >= MaxCandidates:
			c.Reason = ReasonTooMany
		case isBareToken(line):
			checked++
			claims, verr := v.check(line, turn, now)
			if verr != nil {
				c.Reason, c.Err = verr.Reason, verr
			} else {
				c.Claims = claims
			}
		default:
			c.Reason = classifyEmbedded(line)
		}
		if c.Reason != "" {
			d.Rejected = append(d.Rejected, c)
		} else {
			d.Valid = append(d.Valid, c)
		}
	}
	valid := d.Valid[:0]
	for _, c := range d.Valid {
		if verr := v.consume(c.Claims); verr != nil {
			c.Reason, c.Err, c.Claims = verr.Reason, verr, Claims{}
			d.Rejected = append(d.Rejected, c)
			continue
		}
		valid = append(valid, c)
	}
	d.Valid = valid
	slices.SortStableFunc(d.Rejected, func(a, b Candidate) int { return a.Line - b.Line })
	if len(d.Valid) == 0 {
		d.Outcome = OutcomeMissing
		return d
	}
	best := 0
	for i, c := range d.Valid {
		if c.Claims.Action.rank() >= d.Valid[best].Claims.Action.rank() {
			best = i
		}
	}
	chosen := d.Valid[best]
	d.Outcome, d.Line = outcomeOf(chosen.Claims.Action), chosen.Line
	d.Token = &chosen.Claims
	if len(d.Valid) > 1 {
		d.Lints = append(d.Lints, LintMultiTokens)
	}
	for _, l := range lines[chosen.Line:] {
		if strings.TrimSpace(l) != "" {
			d.Lints = append(d.Lints, LintPostTokenText)
			break
		}
	}
	return d
}

// isBareToken reports whether line is nothing but one token-shaped run: it
// starts with the mark, ends with ">>>", holds the mark once and no space,
// quote or backtick. Such a line is verified; its failure says what is wrong
// with the token itself.
func isBareToken(line string) bool {
	if !strings.HasPrefix(line, tokenMark) || !strings.HasSuffix(line, TokenSuffix) || strings.Count(line, tokenMark) != 1 {
		return false
	}
	return !strings.ContainsFunc(line, func(r rune) bool { return unicode.IsSpace(r) || isQuote(r) || r == '`' })
}

// classifyEmbedded names why a line holding the token mark is not a bare
// token.
func classifyEmbedded(line string) Reason {
	if strings.ContainsRune(line, '`') {
		return ReasonBackticked
	}
	i := strings.Index(line, tokenMark)
	if strings.HasPrefix(strings.TrimSpace(line), ">") {
		return ReasonQuoted
	}
	if r, _ := utf8.DecodeLastRuneInString(line[:i]); isQuote(r) {
		return ReasonQuoted
	}
	last := strings.LastIndex(line, tokenMark)
	end := strings.Index(line[last:], TokenSuffix)
	if end < 0 {
		return ReasonSplit
	}
	if r, _ := utf8.DecodeRuneInString(line[last+end+len(TokenSuffix):]); isQuote(r) {
		return ReasonQuoted
	}
	return ReasonEmbedded
}

func isQuote(r rune) bool {
	switch r {
	case '"', '\'', '“', '”', '‘', '’', '«', '»', '„', '‚', '‹', '›':
		return true
	}
	return false
}

// fenceMark returns the code-fence run (``` or ~~~ or longer, indented at
// most three spaces) that starts line and the rest of the line, or "".
func fenceMark(line string) (run, rest string) {
	t := strings.TrimLeft(line, " ")
	if len(line)-len(t) > 3 {
		return "", ""
	}
	for _, c := range []byte{'`', '~'} {
		n := 0
		for n < len(t) && t[n] == c {
			n++
		}
		if n >= 3 && !(c == '`' && strings.ContainsRune(t[n:], '`')) {
			return t[:n], t[n:]
		}
	}
	return "", ""
}

// StripTokens returns output without its tokens (see Stripper.Line): every
// line that is exactly a token by §7's syntax (a trailing "\r" aside),
// verified or not, and a token written at the start or the end of a line of
// text, with the spaces that set it off — a misplaced token decides nothing,
// and a reader has no use for it. The blank lines this leaves at the end go
// too; the rest is kept byte for byte. Use it on an answer before
// delivering it or keeping it as the turn's output.
func StripTokens(output string) string {
	if !strings.Contains(output, TokenPrefix) {
		return output
	}
	var b strings.Builder
	var s Stripper
	removed := false
	for l := range strings.SplitAfterSeq(output, "\n") {
		body, nl := strings.CutSuffix(l, "\n")
		out, keep := s.Line(body)
		removed = removed || !keep || out != body
		if keep {
			b.WriteString(out)
			if nl {
				b.WriteByte('\n')
			}
		}
	}
	if !removed {
		return output
	}
	return strings.TrimRight(b.String(), " \t\r\n")
}

// Stripper strips an output's tokens line by line, as StripTokens does,
// keeping track of the code blocks the lines are in — for text that comes
// a line at a time (a stream). The zero Stripper is at an output's start.
type Stripper struct{ fence codeFence }

// Line returns the next line of the output (without its "\n"; a trailing
// "\r" is kept) with its tokens stripped, and keep false when nothing of it
// is left. A line that is exactly a token by §7's syntax goes. Out of a code
// block, on a line whose tokens Decide rejects only for being written
// within text (ReasonEmbedded: not quoted, backticked or in a quote block),
// the tokens at the line's start and end go with the spaces and tabs next to
// them (the line's indentation stays), and the line goes when nothing else
// was on it. A token inside the line stays.
func (s *Stripper) Line(line string) (out string, keep bool) {
	body, cr := strings.CutSuffix(line, "\r")
	inFence := s.fence.step(body)
	if IsTokenSyntax(body) {
		return "", false
	}
	if inFence || !strings.Contains(body, TokenPrefix) || classifyEmbedded(body) != ReasonEmbedded {
		return line, true
	}
	rest := strings.TrimLeft(body, " \t")
	indent := body[:len(body)-len(rest)]
	stripped := false
	for {
		tok, ok := leadingToken(rest)
		if !ok {
			break
		}
		rest, stripped = strings.TrimLeft(rest[len(tok):], " \t"), true
	}
	for {
		r := strings.TrimRight(rest, " \t")
		tok, ok := trailingToken(r)
		if !ok {
			break
		}
		rest, stripped = strings.TrimRight(r[:len(r)-len(tok)], " \t"), true
	}
	switch {
	case !stripped:
		return line, true
	case rest == "":
		return "", false
	}
	if cr {
		rest += "\r"
	}
	return indent + rest, true
}

// leadingToken returns the token s begins with, if it begins with one.
func leadingToken(s string) (string, bool) {
	if !strings.HasPrefix(s, TokenPrefix) {
		return "", false
	}
	end := strings.Index(s, TokenSuffix)
	if end < 0 {
		return "", false
	}
	tok := s[:end+len(TokenSuffix)]
	return tok, IsTokenSyntax(tok)
}

// trailingToken returns the token s ends with, if it ends with one.
func trailingToken(s string) (string, bool) {
	if !strings.HasSuffix(s, TokenSuffix) {
		return "", false
	}
	i := strings.LastIndex(s, TokenPrefix)
	if i < 0 {
		return "", false
	}
	tok := s[i:]
	return tok, IsTokenSyntax(tok)
}

// codeFence follows the code blocks of an output line by line: the fence
// run (``` or ~~~ or longer) of the open block, "" out of one.
type codeFence string

// step takes the next line (without "\r\n") and reports whether it is part
// of a code block: inside one, or a fence line that opens or closes one.
func (f *codeFence) step(line string) bool {
	in := *f != ""
	if run, rest := fenceMark(line); run != "" {
		in = true // a fence line is part of the code block
		switch {
		case *f == "":
			*f = codeFence(run)
		case run[0] == (*f)[0] && len(run) >= len(*f) && strings.TrimSpace(rest) == "":
			*f = ""
		}
	}
	return in
}
