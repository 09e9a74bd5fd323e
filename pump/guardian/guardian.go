package guardian

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/xml-pipeline/xmlpipe/xmlpipe"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/regfile"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// Guardian applies the rules of an organism's constitution documents to
// messages (seed 003, "Security Validation Protocol") and composes the
// constitution text of each agent. It is immutable once built; a nil
// *Guardian has no documents.
type Guardian struct {
	docs  []*Document
	rules []*Rule
}

// Load reads and parses the documents at paths (in order) and builds the
// guardian over them; agents are the names of the organism's agents, which
// a document's scope may name. Every problem is reported with file:line.
func Load(paths []string, agents []string) (*Guardian, error) {
	docs := make([]*Document, 0, len(paths))
	var errs []error
	for _, p := range paths {
		data, err := readBounded(p)
		if err != nil {
			errs = append(errs, &Error{File: p, Msg: err.Error()})
			continue
		}
		d, err := Parse(p, data)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		docs = append(docs, d)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return New(docs, agents)
}

// readBounded reads a document file, refusing one larger than
// MaxDocumentBytes or that is not a regular file.
func readBounded(path string) ([]byte, error) {
	f, err := regfile.Open(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return nil, pe.Err
		}
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxDocumentBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxDocumentBytes {
		return nil, fmt.Errorf("larger than %d bytes", MaxDocumentBytes)
	}
	return data, nil
}

// New builds a guardian over parsed documents: every scope must be
// AllAgents or one of agents (compared case-insensitively), and rule ids
// must be unique across the documents.
func New(docs []*Document, agents []string) (*Guardian, error) {
	g := &Guardian{}
	var errs []error
	firstID := map[string]*Rule{}
	for _, d := range docs {
		if d.Scope != AllAgents && !slices.ContainsFunc(agents, func(a string) bool { return strings.EqualFold(a, d.Scope) }) {
			known := "none"
			if len(agents) > 0 {
				known = strings.Join(agents, ", ")
			}
			errs = append(errs, &Error{File: d.File, Line: d.ScopeLine,
				Msg: fmt.Sprintf("scope: no agent named %q (want %s or an agent: %s)", d.Scope, AllAgents, known)})
		}
		for _, r := range d.Rules {
			if f, dup := firstID[r.ID]; dup {
				errs = append(errs, &Error{File: d.File, Line: r.Line,
					Msg: fmt.Sprintf("duplicate rule id %q (first at %s:%d)", r.ID, f.Doc.File, f.Line)})
				continue
			}
			firstID[r.ID] = r
			g.rules = append(g.rules, r)
		}
		g.docs = append(g.docs, d)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return g, nil
}

// Documents returns the documents, in load order.
func (g *Guardian) Documents() []*Document {
	if g == nil {
		return nil
	}
	return slices.Clone(g.docs)
}

// Rules returns every rule, in load order.
func (g *Guardian) Rules() []*Rule {
	if g == nil {
		return nil
	}
	return slices.Clone(g.rules)
}

// HasRules reports whether any document has a rule.
func (g *Guardian) HasRules() bool { return g != nil && len(g.rules) > 0 }

// governs reports whether d's scope covers the agent called name.
func (d *Document) governs(name string) bool {
	return d.Scope == AllAgents || strings.EqualFold(d.Scope, name)
}

// Constitution returns the constitution text of the agent called name:
// builtin, extended or replaced (Document.Mode) by the body of every
// document in its scope — the all_agents documents first, then the ones
// naming the agent, each group in load order. A document without a body
// changes nothing.
func (g *Guardian) Constitution(name, builtin string) string {
	text := builtin
	if g == nil {
		return text
	}
	for _, pass := range []bool{true, false} {
		for _, d := range g.docs {
			if (d.Scope == AllAgents) != pass || !d.governs(name) || d.Body == "" {
				continue
			}
			if d.Mode == Replace || text == "" {
				text = d.Body
			} else {
				text += "\n\n" + d.Body
			}
		}
	}
	return text
}

// Subject is a message as the guardian judges it.
type Subject struct {
	// From and To are its sender and target; FromAgent and ToAgent mark
	// LLM agents. Rules apply to what reaches an agent (the documents in
	// the target's scope) and to what an agent sends (the sender's).
	From, To           string
	FromAgent, ToAgent bool
	// Payload is the canonical payload XML.
	Payload []byte
	// Answered is, for an answer the pump turned into the calling agent's
	// text payload (a tool's result, a callable's answer: their JSON form
	// as the agent's Text), the answer's payload XML as its sender wrote
	// it; nil for any other message. A rule judges both forms, so one
	// written against the result's XML (<Value>42</Value>) and one written
	// against what the agent reads ("Value":"42") both match.
	Answered []byte
	// Detail is, for a failure (a <huh>, a SystemError), what it says
	// beyond its canned text — a handler's error — matched like its text.
	Detail string
}

// Verdict is the guardian's decision about a message.
type Verdict struct {
	// Action is Deny, Review or Allow.
	Action Action
	// Rules are the rules that decided it: every deny rule that matched
	// (Deny), or every review rule that matched (Review).
	Rules []*Rule
}

// RuleIDs lists the ids of v's rules.
func (v Verdict) RuleIDs() []string {
	out := make([]string, len(v.Rules))
	for i, r := range v.Rules {
		out[i] = r.ID
	}
	return out
}

// Reason joins the reasons of v's rules ("; " between distinct ones).
func (v Verdict) Reason() string {
	var rs []string
	for _, r := range v.Rules {
		if !slices.Contains(rs, r.Reason) {
			rs = append(rs, r.Reason)
		}
	}
	return strings.Join(rs, "; ")
}

// Severity is the highest severity of v's rules ("" without rules).
func (v Verdict) Severity() string {
	best := -1
	for _, r := range v.Rules {
		best = max(best, slices.Index(stage.Severities, r.Severity))
	}
	if best < 0 {
		return ""
	}
	return stage.Severities[best]
}

// Refusal is the structured refusal of a Deny verdict: the rules' reasons,
// the first suggestion given, the highest severity and every violated id.
func (v Verdict) Refusal() *xmlpipe.Refusal {
	suggestion := ""
	for _, r := range v.Rules {
		if r.Suggestion != "" {
			suggestion = r.Suggestion
			break
		}
	}
	return stage.NewRefusal(v.Reason(), suggestion, v.Severity(), v.RuleIDs()...)
}

// Check applies the rules in scope to s: a deny rule that matches refuses
// it (whatever else matches), else a review rule that matches sends it to a
// human, else it is allowed. A rule matches when its expression matches
// the payload's text (Text) or its canonical XML — or, for an answer the
// agent reads as text (Subject.Answered), the text or XML of the answer
// as its sender wrote it. Messages between listeners that are not agents
// are always allowed.
func (g *Guardian) Check(s Subject) Verdict {
	if !g.HasRules() || (!s.FromAgent && !s.ToAgent) {
		return Verdict{Action: Allow}
	}
	var forms []string // the texts a rule is matched against
	var deny, review []*Rule
	for _, r := range g.rules {
		if !(s.ToAgent && r.Doc.governs(s.To) || s.FromAgent && r.Doc.governs(s.From)) {
			continue
		}
		if r.Action == Review && len(deny) > 0 {
			continue // a deny decides already
		}
		if forms == nil {
			forms = s.forms()
		}
		if !slices.ContainsFunc(forms, r.Matches) {
			continue
		}
		if r.Action == Deny {
			deny = append(deny, r)
		} else {
			review = append(review, r)
		}
	}
	switch {
	case len(deny) > 0:
		return Verdict{Action: Deny, Rules: deny}
	case len(review) > 0:
		return Verdict{Action: Review, Rules: review}
	}
	return Verdict{Action: Allow}
}

// forms are the texts rules are matched against: the payload's text and
// XML, those of the answer it was made from (Answered), and a failure's
// detail — each also folded (fold) when that changes it.
func (s Subject) forms() []string {
	out := []string{Text(s.Payload), string(s.Payload)}
	if len(s.Answered) > 0 {
		out = append(out, Text(s.Answered), string(s.Answered))
	}
	if s.Detail != "" {
		out = append(out, s.Detail)
	}
	return withFolded(out)
}

// Text returns the text of a payload as rules see it: the character data
// of its elements with entities decoded, the text of separate elements
// joined by one space (<RunCommand><Command>rm</Command><Arg>-rf</Arg>
// reads "rm -rf"). Bytes that are not XML are returned as they are.
func Text(payload []byte) string {
	dec := xml.NewDecoder(bytes.NewReader(payload))
	dec.Strict = true
	var b strings.Builder
	sep := false
	for {
		tok, err := dec.RawToken()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return b.String()
			}
			return string(payload)
		}
		switch t := tok.(type) {
		case xml.CharData:
			s := strings.TrimSpace(string(t))
			if s == "" {
				continue
			}
			if sep && b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(s)
			sep = false
		case xml.StartElement, xml.EndElement:
			sep = true
		}
	}
}
