package stage

import "github.com/xml-pipeline/xmlpipe/xmlpipe"

// RefusalStatus is the one <status> an xmlpipe.Refusal carries.
const RefusalStatus = "refused"

// The severities of an xmlpipe.Refusal (schemas/refusal.xsd).
const (
	SeverityLow      = "low"
	SeverityMedium   = "medium"
	SeverityHigh     = "high"
	SeverityCritical = "critical"
)

// Severities lists the severities, least serious first.
var Severities = []string{SeverityLow, SeverityMedium, SeverityHigh, SeverityCritical}

// NewRefusal builds an xmlpipe.Refusal with status "refused"; an unknown severity
// becomes "medium".
func NewRefusal(reason, suggestion, severity string, rules ...string) *xmlpipe.Refusal {
	ok := false
	for _, s := range Severities {
		ok = ok || s == severity
	}
	if !ok {
		severity = SeverityMedium
	}
	return &xmlpipe.Refusal{Status: RefusalStatus, Reason: reason, ViolatedRules: append([]string(nil), rules...),
		Suggestion: suggestion, Severity: severity}
}
