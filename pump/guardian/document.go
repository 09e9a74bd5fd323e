package guardian

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// MaxDocumentBytes caps one constitution document.
const MaxDocumentBytes = 1 << 20

// AllAgents is the scope of a document that governs every agent.
const AllAgents = "all_agents"

// ErrDocument is wrapped by every error about a constitution document.
var ErrDocument = errors.New("constitution document")

// Error is a problem in a constitution document, located in it.
type Error struct {
	// File is the document's name as given; Line is 1-based (0: unknown).
	File string
	Line int
	// Msg says what is wrong.
	Msg string
}

// Error formats the problem as "file:line: message".
func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return e.File + ": " + e.Msg
}

// Unwrap returns ErrDocument.
func (e *Error) Unwrap() error { return ErrDocument }

// Mode says what a document's body does to the constitution text that
// opens every model request of the agents in its scope.
type Mode string

// The modes.
const (
	// Extend appends the body to the text (the default).
	Extend Mode = "extend"
	// Replace makes the body the text, dropping what came before it.
	Replace Mode = "replace"
)

// Action is what a rule does to a message it matches.
type Action string

// The actions (Allow is no rule's: it is what no match gives).
const (
	Allow  Action = "allow"
	Review Action = "review"
	Deny   Action = "deny"
)

// Rule is one rule of a document: a Go (RE2) regular expression, and what
// a message matching it gets.
type Rule struct {
	// ID names the rule (unique across the organism's documents); a
	// refusal lists the ids it violated.
	ID string
	// Action is Deny (the message is refused) or Review (a human decides).
	Action Action
	// Pattern is the regular expression as written.
	Pattern string
	// Reason says why, in the refusal or the approval request.
	Reason string
	// Suggestion is a compliant alternative (optional).
	Suggestion string
	// Severity is low, medium (the default), high or critical.
	Severity string
	// Line is where the rule starts in its document; Doc is the document.
	Line int
	Doc  *Document

	re *regexp.Regexp
}

// Matches reports whether the rule's expression matches text.
func (r *Rule) Matches(text string) bool { return r.re.MatchString(text) }

// Document is one Agent OS constitution document (seed 003, "Constitutional
// Document Format"): Markdown with YAML frontmatter.
type Document struct {
	// File is the name the document was loaded under.
	File string
	// Type is document_type (always "constitution").
	Type string
	// Version, EffectiveDate, AuthorityLevel and AmendmentProcess are the
	// frontmatter's metadata.
	Version, EffectiveDate, AuthorityLevel, AmendmentProcess string
	// Scope is AllAgents or the name of the one agent it governs.
	Scope string
	// Mode says what Body does to the constitution text (Extend by
	// default).
	Mode Mode
	// Rules are the document's rules, in order.
	Rules []*Rule
	// Body is the Markdown after the frontmatter, trimmed.
	Body string
	// Sections are the body's headings, in order.
	Sections []string
	// ScopeLine is where scope is written.
	ScopeLine int
}

// The frontmatter keys, in the order they are documented.
var frontmatterKeys = []string{"document_type", "version", "effective_date", "scope", "authority_level",
	"amendment_process", "mode", "rules"}

// The keys of a rule.
var ruleKeys = []string{"id", "deny", "review", "reason", "suggestion", "severity"}

// Parse reads a constitution document: a first line "---", YAML
// frontmatter, a line "---", then the Markdown body. name is used in
// errors. It checks the document alone (the ids of one document are
// unique, every expression compiles); New checks documents together.
func Parse(name string, data []byte) (doc *Document, err error) {
	defer func() {
		// The YAML library is third-party code fed untrusted bytes.
		if r := recover(); r != nil {
			doc, err = nil, &Error{File: name, Msg: fmt.Sprintf("invalid YAML: parser failure: %v", r)}
		}
	}()
	bad := func(line int, format string, args ...any) error {
		return &Error{File: name, Line: line, Msg: fmt.Sprintf(format, args...)}
	}
	if len(data) > MaxDocumentBytes {
		return nil, bad(0, "document is %d bytes, more than %d", len(data), MaxDocumentBytes)
	}
	if !utf8.Valid(data) {
		return nil, bad(lineAt(data, firstInvalidUTF8(data)), "document is not valid UTF-8")
	}
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	front, body, ok := split(data)
	if !ok {
		return nil, bad(1, `a constitution document starts with YAML frontmatter between two "---" lines`)
	}
	doc = &Document{File: name, Mode: Extend}
	root, err := parseFrontmatter(name, front)
	if err != nil {
		return nil, err
	}
	line := func(n *yaml.Node) int { return n.Line + 1 } // the frontmatter starts on line 2
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		key := k.Value
		if k.Kind != yaml.ScalarNode || !contains(frontmatterKeys, key) {
			return nil, bad(line(k), "unknown frontmatter key %q (want %s)", key, strings.Join(frontmatterKeys, ", "))
		}
		if _, dup := seen[key]; dup {
			return nil, bad(line(k), "%s given twice", key)
		}
		seen[key] = v
		if key == "rules" {
			continue
		}
		s, err := scalar(v)
		if err != nil {
			return nil, bad(line(v), "%s: %v", key, err)
		}
		switch key {
		case "document_type":
			doc.Type = s
		case "version":
			doc.Version = s
		case "effective_date":
			if _, err := time.Parse(time.DateOnly, s); err != nil {
				return nil, bad(line(v), "effective_date: want a date like 2025-01-15, got %q", s)
			}
			doc.EffectiveDate = s
		case "scope":
			doc.Scope, doc.ScopeLine = s, line(v)
		case "authority_level":
			doc.AuthorityLevel = s
		case "amendment_process":
			doc.AmendmentProcess = s
		case "mode":
			switch Mode(strings.ToLower(s)) {
			case Extend, Replace:
				doc.Mode = Mode(strings.ToLower(s))
			default:
				return nil, bad(line(v), "mode: want extend or replace, got %q", s)
			}
		}
	}
	for _, req := range []struct{ key, val string }{{"document_type", doc.Type}, {"version", doc.Version},
		{"scope", doc.Scope}, {"authority_level", doc.AuthorityLevel}} {
		if strings.TrimSpace(req.val) == "" {
			at := 1
			if n := seen[req.key]; n != nil {
				at = line(n)
			}
			return nil, bad(at, "%s is required", req.key)
		}
	}
	if doc.Type != "constitution" {
		return nil, bad(line(seen["document_type"]), "document_type: want constitution, got %q", doc.Type)
	}
	if rules := seen["rules"]; rules != nil {
		if doc.Rules, err = parseRules(name, doc, rules); err != nil {
			return nil, err
		}
	}
	doc.Body = strings.TrimSpace(string(body))
	doc.Sections = headings(doc.Body)
	return doc, nil
}

// parseFrontmatter parses the frontmatter into its root mapping (empty
// frontmatter is an empty mapping).
func parseFrontmatter(name string, front []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(front))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return &yaml.Node{Kind: yaml.MappingNode}, nil
		}
		return nil, syntaxError(name, err)
	}
	var next yaml.Node
	if err := dec.Decode(&next); !errors.Is(err, io.EOF) {
		return nil, &Error{File: name, Line: next.Line + 1, Msg: "the frontmatter holds more than one YAML document"}
	}
	if len(doc.Content) == 0 {
		return &yaml.Node{Kind: yaml.MappingNode}, nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, &Error{File: name, Line: root.Line + 1, Msg: "the frontmatter must be a YAML mapping"}
	}
	return root, nil
}

// parseRules parses the rules: list.
func parseRules(name string, doc *Document, n *yaml.Node) ([]*Rule, error) {
	bad := func(line int, format string, args ...any) error {
		return &Error{File: name, Line: line + 1, Msg: fmt.Sprintf(format, args...)}
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return nil, nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, bad(n.Line, "rules: want a list of rules")
	}
	ids := map[string]int{}
	out := make([]*Rule, 0, len(n.Content))
	for i, rn := range n.Content {
		path := fmt.Sprintf("rules[%d]", i)
		if rn.Kind != yaml.MappingNode {
			return nil, bad(rn.Line, "%s: want a mapping with id, deny or review, reason, suggestion, severity", path)
		}
		r := &Rule{Doc: doc, Line: rn.Line + 1, Severity: stage.SeverityMedium}
		seen := map[string]bool{}
		for j := 0; j+1 < len(rn.Content); j += 2 {
			k, v := rn.Content[j], rn.Content[j+1]
			if k.Kind != yaml.ScalarNode || !contains(ruleKeys, k.Value) {
				return nil, bad(k.Line, "%s: unknown key %q (want %s)", path, k.Value, strings.Join(ruleKeys, ", "))
			}
			if seen[k.Value] {
				return nil, bad(k.Line, "%s: %s given twice", path, k.Value)
			}
			seen[k.Value] = true
			s, err := scalar(v)
			if err != nil {
				return nil, bad(v.Line, "%s.%s: %v", path, k.Value, err)
			}
			switch k.Value {
			case "id":
				r.ID = strings.TrimSpace(s)
			case "deny", "review":
				if r.Action != "" {
					return nil, bad(k.Line, "%s: give deny or review, not both", path)
				}
				r.Action, r.Pattern = Action(k.Value), s
				re, err := regexp.Compile(s)
				if err != nil {
					return nil, bad(v.Line, "%s.%s: bad regular expression (Go RE2 syntax): %v", path, k.Value, err)
				}
				r.re = re
			case "reason":
				r.Reason = strings.TrimSpace(s)
			case "suggestion":
				r.Suggestion = strings.TrimSpace(s)
			case "severity":
				sev := strings.ToLower(strings.TrimSpace(s))
				if !contains(stage.Severities, sev) {
					return nil, bad(v.Line, "%s.severity: want low, medium, high or critical, got %q", path, s)
				}
				r.Severity = sev
			}
		}
		switch {
		case r.ID == "":
			return nil, bad(rn.Line, "%s: id is required", path)
		case r.Action == "":
			return nil, bad(rn.Line, "%s (%s): give deny: or review: with a regular expression", path, r.ID)
		case r.Pattern == "":
			return nil, bad(rn.Line, "%s (%s): the %s expression is empty (it would match everything)", path, r.ID, r.Action)
		case r.Reason == "":
			return nil, bad(rn.Line, "%s (%s): reason is required", path, r.ID)
		}
		if first, dup := ids[r.ID]; dup {
			return nil, bad(rn.Line, "%s: duplicate rule id %q (first at line %d)", path, r.ID, first)
		}
		ids[r.ID] = r.Line
		out = append(out, r)
	}
	return out, nil
}

// scalar returns the text of a scalar node.
func scalar(n *yaml.Node) (string, error) {
	switch n.Kind {
	case yaml.ScalarNode:
		if n.ShortTag() == "!!null" {
			return "", nil
		}
		return n.Value, nil
	case yaml.AliasNode:
		return "", errors.New("aliases are not allowed")
	}
	return "", errors.New("want a single value, not a list or mapping")
}

// split cuts a document into its frontmatter and body: the first line must
// be "---", and the frontmatter ends at the next line that is "---" (or
// "...").
func split(data []byte) (front, body []byte, ok bool) {
	first, rest, found := bytes.Cut(data, []byte("\n"))
	if strings.TrimRight(string(first), " \t\r") != "---" {
		return nil, nil, false
	}
	off := 0
	for off <= len(rest) {
		end := bytes.IndexByte(rest[off:], '\n')
		next := len(rest)
		if end >= 0 {
			next = off + end
		}
		l := strings.TrimRight(string(rest[off:next]), " \t\r")
		if l == "---" || l == "..." {
			body = nil
			if next < len(rest) {
				body = rest[next+1:]
			}
			return rest[:off], body, true
		}
		if end < 0 || !found {
			break
		}
		off = next + 1
	}
	return nil, nil, false
}

// headings returns the Markdown ATX headings of body ("# Title" …).
func headings(body string) []string {
	var out []string
	inFence := false
	for _, l := range strings.Split(body, "\n") {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			inFence = !inFence
			continue
		}
		if inFence || !strings.HasPrefix(t, "#") {
			continue
		}
		h := strings.TrimLeft(t, "#")
		if len(t)-len(h) <= 6 && (h == "" || h[0] == ' ' || h[0] == '\t') {
			if h = strings.TrimSpace(strings.TrimRight(strings.TrimSpace(h), "#")); h != "" {
				out = append(out, h)
			}
		}
	}
	return out
}

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// syntaxError locates a yaml.v3 error in the document (the frontmatter
// starts on line 2; yaml.v3 counts parser errors from 0, scanner errors
// from 1).
func syntaxError(name string, err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 2
	if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
		n, _ := strconv.Atoi(m[1])
		msg = m[2]
		line = n + 1
		if strings.HasPrefix(msg, "did not find expected") {
			line++
		}
	}
	return &Error{File: name, Line: line, Msg: "invalid YAML in the frontmatter: " + msg}
}

// lineAt is the 1-based line of offset off in data.
func lineAt(data []byte, off int) int {
	if off < 0 {
		return 0
	}
	return bytes.Count(data[:min(off, len(data))], []byte("\n")) + 1
}

// firstInvalidUTF8 is the offset of the first invalid UTF-8 byte (-1: none).
func firstInvalidUTF8(data []byte) int {
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size <= 1 {
			return i
		}
		i += size
	}
	return -1
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
