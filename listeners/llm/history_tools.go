package llm

import "encoding/json"

// UnfoldTool is the function with which an agent with a librarian reads
// back a folded part of its history (or lists them, with their summaries):
// its result quotes what that part holds.
const UnfoldTool = unfoldTool

// HistoryTools names the tools a slot of an agent's context history is
// about, for a surface that must know what a record holds without reading
// the agent loop's records itself: for an assistant message with tool
// calls (payload type llm.calls), the tools it called; for one call's
// result (llm.result), that call's tool; for an XML-mode unfold's answer
// (llm.unfolded), UnfoldTool; for a step a halt held (llm.held-step: the
// model's reply, the results and the local tools' messages kept for the
// resume), the tools it called and those of its results. ok is false for
// any other slot.
// A record that cannot be read returns ok with err set, so a caller that
// withholds by tool can withhold it rather than show it.
func HistoryTools(payloadType string, raw []byte) (tools []string, ok bool, err error) {
	switch payloadType {
	case callsType:
		var rec callsRecord
		if err := json.Unmarshal(raw, &rec); err != nil {
			return nil, true, err
		}
		tools = make([]string, len(rec.Calls))
		for i, c := range rec.Calls {
			tools[i] = c.Name
		}
		return tools, true, nil
	case resultType:
		var rec resultRecord
		if err := json.Unmarshal(raw, &rec); err != nil {
			return nil, true, err
		}
		return []string{rec.Name}, true, nil
	case unfoldedType:
		return []string{unfoldTool}, true, nil
	case heldStepType:
		var rec heldStep
		if err := json.Unmarshal(raw, &rec); err != nil {
			return nil, true, err
		}
		for _, c := range rec.Calls {
			tools = append(tools, c.Name)
		}
		for _, r := range rec.Results {
			tools = append(tools, r.Name)
		}
		return tools, true, nil
	}
	return nil, false, nil
}
