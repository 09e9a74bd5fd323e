package aeiou

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Envelope markers (§3.1): single ASCII lines, exact.
const (
	MarkerStart      = "<<<NSENV:V3:START>>>"
	MarkerUserData   = "<<<NSENV:V3:USERDATA>>>"
	MarkerScratchpad = "<<<NSENV:V3:SCRATCHPAD>>>"
	MarkerOutput     = "<<<NSENV:V3:OUTPUT>>>"
	MarkerActions    = "<<<NSENV:V3:ACTIONS>>>"
	MarkerEnd        = "<<<NSENV:V3:END>>>"
)

// Envelope size limits (§3.4).
const (
	MaxEnvelopeBytes   = 1 << 20
	MaxSectionBytes    = 512 << 10
	MaxOutputLineBytes = 8192
)

// bom is the UTF-8 byte order mark, stripped from marker lines only.
const bom = "\xEF\xBB\xBF"

// Envelope is a parsed (or to-be-built) AEIOU v3 envelope (§3).
//
// Layout: every marker is a line of its own; a section's body is the bytes
// after its marker line up to, not including, the newline that ends the line
// before the next marker. A body is thus byte-preserved, may be empty and
// may itself end in newlines: BuildEnvelope writes marker "\n" body "\n", and
// ParseEnvelope gives the body back exactly. The envelope ends with the END
// line, optionally followed by one "\n".
type Envelope struct {
	// UserData is the USERDATA body: the §3.5 JSON object, as bytes.
	UserData []byte
	// Scratchpad and Output are the prior turn's bodies, present when the
	// Has flags are set.
	Scratchpad    []byte
	HasScratchpad bool
	Output        []byte
	HasOutput     bool
	// Actions is the ACTIONS body: one command … endcommand block.
	Actions []byte
	// Lints are what ParseEnvelope noticed without failing (duplicate
	// sections, the first of which was used).
	Lints []EnvelopeLint
}

// EnvelopeLint is a non-fatal finding in an envelope.
type EnvelopeLint struct {
	Lint    Lint
	Section string
	Line    int
}

// section kinds in their fixed order; 0 is not a section.
const (
	secUserData = iota + 1
	secScratchpad
	secOutput
	secActions
)

var sectionNames = [...]string{"", "USERDATA", "SCRATCHPAD", "OUTPUT", "ACTIONS"}

// marker kinds of a line.
const (
	lineBody = iota
	lineStart
	lineSection
	lineEnd
)

// classifyLine returns what a line is (marker or body) and, for a section
// marker, which section. A BOM before a marker is stripped.
func classifyLine(line []byte) (kind, section int) {
	line = bytes.TrimPrefix(line, []byte(bom))
	if !bytes.HasPrefix(line, []byte("<<<NSENV:V3:")) {
		return lineBody, 0
	}
	switch string(line) {
	case MarkerStart:
		return lineStart, 0
	case MarkerEnd:
		return lineEnd, 0
	case MarkerUserData:
		return lineSection, secUserData
	case MarkerScratchpad:
		return lineSection, secScratchpad
	case MarkerOutput:
		return lineSection, secOutput
	case MarkerActions:
		return lineSection, secActions
	}
	return lineBody, 0
}

func envErr(err error, section, line int, format string, args ...any) *EnvelopeError {
	return &EnvelopeError{Section: sectionNames[section], Line: line, Detail: fmt.Sprintf(format, args...), Err: err}
}

// ParseEnvelope parses and validates an envelope: at most 1 MiB of UTF-8;
// START on the first line; sections in the order USERDATA, [SCRATCHPAD],
// [OUTPUT], ACTIONS, each at most 512 KiB (OUTPUT lines at most 8192 B); a
// repeated section is ignored after the first (LintDuplicateSection);
// USERDATA per §3.5; ACTIONS one command … endcommand; END on the last line.
// Every failure is an *EnvelopeError.
func ParseEnvelope(b []byte) (*Envelope, error) {
	if len(b) > MaxEnvelopeBytes {
		return nil, envErr(ErrEnvelopeTooLarge, 0, 0, "%d bytes (at most %d)", len(b), MaxEnvelopeBytes)
	}
	if !utf8.Valid(b) {
		i := invalidUTF8At(b)
		return nil, envErr(ErrNotUTF8, 0, 1+bytes.Count(b[:i], []byte("\n")), "invalid byte %#02x at offset %d", b[i], i)
	}
	e := &Envelope{}
	var (
		lineNo    int
		started   bool
		cur       int // the section whose body is being read (0: none yet)
		curLine   int
		bodyStart int
		seen      [5]bool
		maxSec    int
		pos       int
	)
	// closeBody assigns the body b[bodyStart:end] (without the newline
	// before the next marker) to the current section.
	closeBody := func(end int) error {
		if cur == 0 {
			if end > bodyStart {
				return envErr(ErrEnvelopeSyntax, 0, lineNo, "text between START and the first section")
			}
			return nil
		}
		body := b[bodyStart:end]
		if len(body) > 0 && body[len(body)-1] == '\n' {
			body = body[:len(body)-1]
		}
		if seen[cur] {
			e.Lints = append(e.Lints, EnvelopeLint{Lint: LintDuplicateSection, Section: sectionNames[cur], Line: curLine})
			return nil
		}
		if cur < maxSec {
			return envErr(ErrSectionOrder, cur, curLine, "%s after %s", sectionNames[cur], sectionNames[maxSec])
		}
		seen[cur], maxSec = true, cur
		if len(body) > MaxSectionBytes {
			return envErr(ErrSectionTooLarge, cur, curLine, "%d bytes (at most %d)", len(body), MaxSectionBytes)
		}
		body = bytes.Clone(body)
		switch cur {
		case secUserData:
			e.UserData = body
		case secScratchpad:
			e.Scratchpad, e.HasScratchpad = body, true
		case secOutput:
			if n, l := longestLine(body); n > MaxOutputLineBytes {
				return envErr(ErrLineTooLong, cur, curLine+l, "%d bytes (at most %d)", n, MaxOutputLineBytes)
			}
			e.Output, e.HasOutput = body, true
		case secActions:
			e.Actions = body
		}
		return nil
	}
	for pos < len(b) {
		lineNo++
		end := bytes.IndexByte(b[pos:], '\n')
		next := len(b)
		if end < 0 {
			end = len(b)
		} else {
			end += pos
			next = end + 1
		}
		kind, sec := classifyLine(b[pos:end])
		switch {
		case !started:
			if kind != lineStart {
				return nil, envErr(ErrEnvelopeSyntax, 0, lineNo, "the first line is not %s", MarkerStart)
			}
			started, bodyStart = true, next
		case kind == lineStart:
			return nil, envErr(ErrEnvelopeSyntax, 0, lineNo, "a second %s", MarkerStart)
		case kind == lineSection:
			if err := closeBody(pos); err != nil {
				return nil, err
			}
			cur, curLine, bodyStart = sec, lineNo, next
		case kind == lineEnd:
			if err := closeBody(pos); err != nil {
				return nil, err
			}
			if next < len(b) {
				return nil, envErr(ErrEnvelopeSyntax, 0, lineNo+1, "data after %s", MarkerEnd)
			}
			if err := e.validate(); err != nil {
				return nil, err
			}
			return e, nil
		}
		pos = next
	}
	if !started {
		return nil, envErr(ErrEnvelopeSyntax, 0, 0, "empty envelope")
	}
	return nil, envErr(ErrEnvelopeSyntax, 0, lineNo, "no %s line", MarkerEnd)
}

// validate checks the required sections and their contents.
func (e *Envelope) validate() error {
	if e.UserData == nil {
		return envErr(ErrMissingSection, secUserData, 0, "USERDATA is required")
	}
	if e.Actions == nil {
		return envErr(ErrMissingSection, secActions, 0, "ACTIONS is required")
	}
	if _, err := ParseUserData(e.UserData); err != nil {
		return err
	}
	return checkActions(e.Actions)
}

// invalidUTF8At returns the offset of b's first invalid UTF-8 byte.
func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// longestLine returns the length of body's longest line and its 1-based
// line number within the body.
func longestLine(body []byte) (n, line int) {
	for i, l := range bytes.Split(body, []byte("\n")) {
		if len(l) > n {
			n, line = len(l), i+1
		}
	}
	return n, line
}

// UserData is the §3.5 USERDATA object.
type UserData struct {
	Subject string
	// Brief is optional ("" when absent).
	Brief string
	// Fields is the fields object (may be empty; numbers that are not
	// integers within ±(2^53−1) are kept as json.Number).
	Fields map[string]any
}

// ParseUserData validates a USERDATA body (§3.5): a JSON object (duplicate
// keys refused) whose "subject" is a string, "brief", if present, a string,
// and "fields" an object; other members are ignored. A failure is an
// *EnvelopeError wrapping ErrUserData.
func ParseUserData(body []byte) (UserData, error) {
	v, err := parseJSON(body, true)
	if err != nil {
		return UserData{}, envErr(ErrUserData, secUserData, 0, "%v", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return UserData{}, envErr(ErrUserData, secUserData, 0, "not a JSON object")
	}
	var u UserData
	if u.Subject, ok = m["subject"].(string); !ok {
		return UserData{}, envErr(ErrUserData, secUserData, 0, `"subject" must be a string`)
	}
	if b, present := m["brief"]; present {
		if u.Brief, ok = b.(string); !ok {
			return UserData{}, envErr(ErrUserData, secUserData, 0, `"brief" must be a string`)
		}
	}
	if u.Fields, ok = m["fields"].(map[string]any); !ok {
		return UserData{}, envErr(ErrUserData, secUserData, 0, `"fields" must be an object`)
	}
	u.Fields = numbersToJSON(u.Fields).(map[string]any)
	return u, nil
}

// numbersToJSON turns parsed non-integer literals into json.Number.
func numbersToJSON(v any) any {
	switch x := v.(type) {
	case jsonNumber:
		return json.Number(x)
	case []any:
		for i := range x {
			x[i] = numbersToJSON(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = numbersToJSON(x[k])
		}
	}
	return v
}

// MarshalUserData returns a USERDATA body for subject, brief (omitted when
// empty) and fields (nil: {}). encoding/json escapes '<', '>' and '&', so
// no string inside can form an envelope marker.
func MarshalUserData(subject, brief string, fields map[string]any) ([]byte, error) {
	if fields == nil {
		fields = map[string]any{}
	}
	b, err := json.Marshal(struct {
		Subject string         `json:"subject"`
		Brief   string         `json:"brief,omitempty"`
		Fields  map[string]any `json:"fields"`
	}{subject, brief, fields})
	if err != nil {
		return nil, envErr(ErrUserData, secUserData, 0, "%v", err)
	}
	return b, nil
}

// checkActions checks that an ACTIONS body is exactly one command block: its
// first non-blank line is "command" (optionally followed by text), its last
// "endcommand", and no other line opens or closes a command.
func checkActions(body []byte) error {
	var lines []string
	for l := range strings.SplitSeq(string(body), "\n") {
		if t := strings.TrimSpace(l); t != "" {
			lines = append(lines, t)
		}
	}
	isCommand := func(l string) bool { return l == "command" || strings.HasPrefix(l, "command ") }
	if len(lines) < 2 || !isCommand(lines[0]) || lines[len(lines)-1] != "endcommand" {
		return envErr(ErrActions, secActions, 0, "must be one command … endcommand block")
	}
	for _, l := range lines[1 : len(lines)-1] {
		if isCommand(l) || l == "endcommand" {
			return envErr(ErrActions, secActions, 0, "more than one command block")
		}
	}
	return nil
}

// BuildEnvelope writes e (Lints ignored) as an envelope, checking it as
// ParseEnvelope does: a valid USERDATA and ACTIONS, UTF-8 bodies within the
// size limits, and no body line that is a marker (which would split the
// envelope; ErrMarkerInBody). Every failure is an *EnvelopeError.
func BuildEnvelope(e *Envelope) ([]byte, error) {
	if e.UserData == nil {
		return nil, envErr(ErrMissingSection, secUserData, 0, "USERDATA is required")
	}
	if e.Actions == nil {
		return nil, envErr(ErrMissingSection, secActions, 0, "ACTIONS is required")
	}
	type part struct {
		sec  int
		body []byte
	}
	parts := []part{{secUserData, e.UserData}}
	if e.HasScratchpad {
		parts = append(parts, part{secScratchpad, e.Scratchpad})
	}
	if e.HasOutput {
		parts = append(parts, part{secOutput, e.Output})
	}
	parts = append(parts, part{secActions, e.Actions})
	markers := [...]string{"", MarkerUserData, MarkerScratchpad, MarkerOutput, MarkerActions}
	var out bytes.Buffer
	out.WriteString(MarkerStart + "\n")
	for _, p := range parts {
		if !utf8.Valid(p.body) {
			i := invalidUTF8At(p.body)
			return nil, envErr(ErrNotUTF8, p.sec, 1+bytes.Count(p.body[:i], []byte("\n")), "invalid byte %#02x", p.body[i])
		}
		if len(p.body) > MaxSectionBytes {
			return nil, envErr(ErrSectionTooLarge, p.sec, 0, "%d bytes (at most %d)", len(p.body), MaxSectionBytes)
		}
		for i, l := range bytes.Split(p.body, []byte("\n")) {
			if k, _ := classifyLine(l); k != lineBody {
				return nil, envErr(ErrMarkerInBody, p.sec, i+1, "%q", l)
			}
		}
		if p.sec == secOutput {
			if n, l := longestLine(p.body); n > MaxOutputLineBytes {
				return nil, envErr(ErrLineTooLong, p.sec, l, "%d bytes (at most %d)", n, MaxOutputLineBytes)
			}
		}
		out.WriteString(markers[p.sec] + "\n")
		out.Write(p.body)
		out.WriteByte('\n')
	}
	out.WriteString(MarkerEnd)
	if out.Len() > MaxEnvelopeBytes {
		return nil, envErr(ErrEnvelopeTooLarge, 0, 0, "%d bytes (at most %d)", out.Len(), MaxEnvelopeBytes)
	}
	if _, err := ParseUserData(e.UserData); err != nil {
		return nil, err
	}
	if err := checkActions(e.Actions); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
