package aeiou

import (
	"fmt"
	"slices"
	"strings"
)

// The magic tool as a native tool (§6.1 in function-calling form). The agent
// loop declares it with these three values; the model calls it with
// {"kind":"LOOP","payload":{"action":…}}; the loop passes the call's
// arguments to Minter.CallTool and returns Minted.Token as the tool result
// (or the error's text, for the model to correct its call).
const (
	// ToolName is the native tool's name.
	ToolName = "aeiou_magic"
	// ToolDescription is the native tool's description.
	ToolDescription = "Mint the host-signed control token that decides this agent loop. " +
		`Call with kind "LOOP" and payload {"action": "continue" | "done" | "abort"} ` +
		"(optional \"request\" and \"telemetry\" objects of strings, integers, booleans and null). " +
		"Returns one line: write it verbatim, alone, as the last line of your answer."
	// ToolParameters is the JSON Schema of the native tool's arguments.
	ToolParameters = `{"type":"object","properties":{` +
		`"kind":{"type":"string","enum":["LOOP"],"description":"the control kind; AEIOU v3 knows LOOP"},` +
		`"payload":{"type":"object","properties":{` +
		`"action":{"type":"string","enum":["continue","done","abort"],"description":"continue: you need another turn; done: your answer is complete; abort: stop, the task cannot or must not go on"},` +
		`"request":{"type":"object","description":"optional; strings, integers, booleans, null (no floats)"},` +
		`"telemetry":{"type":"object","description":"optional; strings, integers, booleans, null (no floats)"}},` +
		`"required":["action"],"additionalProperties":false}},` +
		`"required":["kind","payload"],"additionalProperties":false}`
)

// ParseToolArguments decodes a magic-tool call's JSON arguments into its
// kind and payload. Anything but {"kind": string, "payload": object} (with no
// floats) is ErrBadRequest.
func ParseToolArguments(args []byte) (kind string, payload map[string]any, err error) {
	v, err := ParseJSON(args)
	if err != nil {
		return "", nil, fmt.Errorf("%w: arguments: %w", ErrBadRequest, err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return "", nil, fmt.Errorf("%w: arguments must be a JSON object", ErrBadRequest)
	}
	var unknown []string
	for k := range m {
		if k != "kind" && k != "payload" {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return "", nil, fmt.Errorf("%w: unknown arguments %s (allowed: kind, payload)", ErrBadRequest, strings.Join(unknown, ", "))
	}
	if kind, ok = m["kind"].(string); !ok {
		return "", nil, fmt.Errorf("%w: \"kind\" must be a string (\"LOOP\")", ErrBadRequest)
	}
	if payload, ok = m["payload"].(map[string]any); !ok {
		return "", nil, fmt.Errorf("%w: \"payload\" must be an object like {\"action\":\"done\"}", ErrBadRequest)
	}
	return kind, payload, nil
}

// CallTool serves one magic-tool call for turn: it parses the call's JSON
// arguments and mints.
func (m *Minter) CallTool(turn Turn, args []byte) (Minted, error) {
	kind, payload, err := ParseToolArguments(args)
	if err != nil {
		return Minted{}, err
	}
	return m.Mint(turn, kind, payload)
}
