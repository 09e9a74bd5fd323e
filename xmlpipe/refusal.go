package xmlpipe

import (
	"encoding/xml"
	"strings"
)

// Refusal is the structured refusal (seed 003, "Refusal Protocol") the pump
// answers a refused message with: a constitution rule denied it, a human
// denied it, or its wait for approval timed out. It goes to the message's
// sender as an error message (an ErrorHandler receives it in
// DeliveryError.Refusal; an external sender gets it as the reply of its
// conversation). It travels in the core namespace:
//
//	<refusal xmlns="https://xml-pipeline.org/ns/core/v1"><status>refused</status><reason>…</reason><violated-rule>no-rm-rf</violated-rule><suggestion>…</suggestion><severity>high</severity></refusal>
type Refusal struct {
	XMLName xml.Name `xml:"https://xml-pipeline.org/ns/core/v1 refusal"`
	// Status is always "refused" (stage.RefusalStatus).
	Status string `xml:"status"`
	// Reason says why: a rule's reason, "denied by <user>: <reason>" or
	// "approval timed out".
	Reason string `xml:"reason"`
	// ViolatedRules are the ids of the constitution rules the message
	// violated (none for a human's denial or a timeout).
	ViolatedRules []string `xml:"violated-rule,omitempty"`
	// Suggestion is a compliant way to reach the goal, when one is known.
	Suggestion string `xml:"suggestion,omitempty"`
	// Severity is one of stage.Severities: low, medium, high or critical.
	Severity string `xml:"severity"`
}

// Summary is the refusal in one line, for consoles and logs:
// "refused (high, rule no-rm-rf): Destructive shell commands are forbidden — Delete single files instead".
func (r *Refusal) Summary() string {
	var b strings.Builder
	b.WriteString("refused (")
	b.WriteString(r.Severity)
	if len(r.ViolatedRules) > 0 {
		b.WriteString(", rule ")
		b.WriteString(strings.Join(r.ViolatedRules, ", "))
	}
	b.WriteString("): ")
	b.WriteString(r.Reason)
	if r.Suggestion != "" {
		b.WriteString(" — ")
		b.WriteString(r.Suggestion)
	}
	return b.String()
}
