package route

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/xml-pipeline/xmlpipe/listeners/llm"
)

// ToolName is the name under which an agent calls the router.
const ToolName = "route"

// toolParameters is the JSON Schema of the route tool's arguments.
const toolParameters = `{"type":"object","properties":{"need":{"type":"string","description":"what you need done, in words (\"read notes/todo.txt\", \"multiply six by seven\")"}},"required":["need"],"additionalProperties":false}`

// ToolSpec is the route tool an agent loop offers its model (seed 000
// §10.4: the agent describes intent, it need not know tool names or
// schemas). Run a call with ParseToolArgs, Router.Route (with the agent's
// mask and a Dispatcher sending as the agent on its thread) and ToolAnswer.
func ToolSpec() llm.ToolSpec {
	return llm.ToolSpec{
		Name: ToolName,
		Description: "Finds the capability that can do what you describe, fills in its request and sends it; " +
			"answers with the capability's reply. Use it when you do not know which tool or peer does the job.",
		Parameters: json.RawMessage(toolParameters),
	}
}

// ParseToolArgs reads a route call's arguments: {"need": "…"}.
func ParseToolArgs(args []byte) (string, error) {
	var a struct {
		Need *string `json:"need"`
	}
	dec := json.NewDecoder(strings.NewReader(string(args)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return "", fmt.Errorf("route: arguments: want {\"need\": \"…\"}: %w", err)
	}
	if a.Need == nil || strings.TrimSpace(*a.Need) == "" {
		return "", fmt.Errorf("route: arguments: %w", ErrEmptyNeed)
	}
	return *a.Need, nil
}

// ToolAnswer renders what Route returned as the route tool's result, the
// text the model reads, and whether it is an error. A refusal reads
// "no matching capability in your profile" and nothing more.
func ToolAnswer(res Result, err error) (string, bool) {
	if err != nil {
		if errors.Is(err, ErrNoCapability) {
			return ErrNoCapability.Error(), true
		}
		return err.Error(), true
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s handled it (payload %s)", res.Selected.Name, res.Fill.Payload)
	if len(res.Dispatched.Answer) > 0 {
		fmt.Fprintf(&b, "; its answer: %s", res.Dispatched.Answer)
	} else {
		b.WriteString("; it sent no answer")
	}
	return b.String(), false
}
