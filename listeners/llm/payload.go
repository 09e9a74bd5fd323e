package llm

import (
	"encoding/xml"
	"fmt"
	"reflect"
	"strings"
	"unicode"

	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// Answer is an agent's plain-text answer to a caller outside the organism (or
// to a listener whose payload has no text field).
type Answer struct {
	XMLName xml.Name `xml:"AgentAnswer"`
	Text    string   `doc:"the agent's answer"`
}

// Halted is what the organism's own user gets from an agent whose turn
// halted — a budget, max_iterations, no progress, a model call that failed
// — in place of an Answer: the reason, as text ("[poet halted: …]"). A
// payload of its own, so that a front door tells a halt from an answer:
// consoles show its text as they show an answer's, the MCP server answers
// it as a tool error (FailedAnswer).
type Halted struct {
	XMLName xml.Name `xml:"AgentHalted"`
	Text    string   `doc:"why the agent stopped before it answered"`
}

// FailedAnswer returns the text of the failure this payload reports in
// place of an answer: a front door that tells failures apart from answers
// (the MCP server's tool errors) reads it.
func (h *Halted) FailedAnswer() string { return h.Text }

// InputTag returns the root tag of a YAML agent's text payload: the agent's
// name in PascalCase followed by "Task" (poet → PoetTask, code-reviewer →
// CodeReviewerTask).
func InputTag(agent string) string {
	var b strings.Builder
	up := true
	for _, r := range agent {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			up = true
			continue
		}
		if up {
			r = unicode.ToUpper(r)
			up = false
		}
		b.WriteRune(r)
	}
	s := b.String()
	if s == "" || !unicode.IsLetter([]rune(s)[0]) {
		s = "Agent" + s
	}
	return s + "Task"
}

// InputType returns the payload type of a YAML agent: one Text field under a
// root tag unique to the agent (InputTag), so `@poet write about rain` works
// from the console and blind self-iteration by root tag reaches only itself.
func InputType(agent string) (*xmlpipe.PayloadType, error) {
	t := reflect.StructOf([]reflect.StructField{
		{Name: "XMLName", Type: reflect.TypeFor[xml.Name](), Tag: reflect.StructTag(fmt.Sprintf(`xml:%q`, InputTag(agent)))},
		{Name: "Text", Type: reflect.TypeFor[string](), Tag: `doc:"what to ask the agent"`},
	})
	pt, err := xmlpipe.NewPayloadType(t)
	if err != nil {
		return nil, fmt.Errorf("llm: payload type of agent %s: %w", agent, err)
	}
	return pt, nil
}

// selfAnswerMark starts the text of an answer an agent gives itself when it
// answers on a self-iteration thread (U+2063, invisible separator).
const selfAnswerMark = "\u2063answer\u2063"

// selfHaltMark follows selfAnswerMark when the answer passed on is a halt's
// reason, so that the caller outside the organism's listeners gets a
// Halted, not an Answer.
const selfHaltMark = "\u2063halted\u2063"
