// Package calculate is the calculate tool: the reference's arithmetic
// (operators, functions, constants) with bounded expression length,
// exponent and result size.
package calculate

import (
	"context"

	"github.com/xml-pipeline/xmlpipe/listeners/tools"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// Name is the tool's name in tools: and tool_config:.
const Name = "calculate"

// Tool is the calculate listener.
type Tool struct {
	// Policy gives the limits for a caller (nil: DefaultLimits).
	Policy tools.Policy
	// Callers lets an answer reach a caller that takes another payload
	// (an agent takes text); nil: answer in the result type.
	Callers tools.Callers
}

// Handle evaluates the expression and answers the caller; a refusal or a
// math error is the result's Error.
func (t *Tool) Handle(_ context.Context, p *Calculate, md xmlpipe.Metadata) (xmlpipe.Response, error) {
	lim := DefaultLimits
	if t.Policy != nil {
		c := t.Policy.Config(md.From, Name)
		lim = Limits{
			MaxLength:   tools.Or(c.MaxExpressionLength, lim.MaxLength),
			MaxExponent: tools.Or(c.MaxExponent, lim.MaxExponent),
			MaxDigits:   tools.Or(c.MaxResultDigits, lim.MaxDigits),
		}
	}
	res := &CalculateResult{Expression: p.Expression}
	v, err := Eval(p.Expression, lim)
	if err != nil {
		res.Error = err.Error()
	} else {
		res.Value = v
	}
	return tools.Answer(t.Callers, md, res), nil
}
