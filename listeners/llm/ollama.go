package llm

import (
	"context"
	"encoding/json"
	"strings"
)

// ollamaChat speaks Ollama's POST {base}/api/chat (no key; NDJSON when
// streamed). Tool calls come without ids (they are minted) and arguments as
// an object; tool results are bound by tool_name; a structured answer is
// asked for with format (the schema).
type ollamaChat struct {
	endpoint
	model string
}

type olOptions struct {
	Temperature *float64 `json:"temperature,omitempty"`
	NumPredict  int      `json:"num_predict,omitempty"`
}

type olRequest struct {
	Model    string          `json:"model"`
	Messages []olMessage     `json:"messages"`
	Tools    []ccTool        `json:"tools,omitempty"`
	Format   json.RawMessage `json:"format,omitempty"`
	Stream   bool            `json:"stream"`
	Options  *olOptions      `json:"options,omitempty"`
}

type olMessage struct {
	Role      Role         `json:"role"`
	Content   string       `json:"content"`
	ToolCalls []olToolCall `json:"tool_calls,omitempty"`
	ToolName  string       `json:"tool_name,omitempty"`
}

type olToolCall struct {
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// olReplyToolCall is a reply's tool call (newer servers add an id).
type olReplyToolCall struct {
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments ccArgs `json:"arguments"`
	} `json:"function"`
}

type olReply struct {
	Model   string `json:"model"`
	Message *struct {
		Content   string            `json:"content"`
		ToolCalls []olReplyToolCall `json:"tool_calls"`
	} `json:"message"`
	Done            bool   `json:"done"`
	DoneReason      string `json:"done_reason"`
	PromptEvalCount int    `json:"prompt_eval_count"`
	EvalCount       int    `json:"eval_count"`
	Error           string `json:"error"`
}

func newOllamaChat(e endpoint, model string) *ollamaChat {
	e.url = strings.TrimRight(e.url, "/") + "/api/chat"
	return &ollamaChat{endpoint: e, model: model}
}

// request builds the wire request of r.
func (o *ollamaChat) request(r Request) olRequest {
	req := olRequest{Model: modelOr(r, o.model), Stream: r.OnDelta != nil}
	if r.Temperature != nil || r.MaxTokens > 0 {
		req.Options = &olOptions{Temperature: r.Temperature, NumPredict: r.MaxTokens}
	}
	names := map[string]string{} // call id → tool name, for results that give none
	for _, m := range r.Messages {
		w := olMessage{Role: m.Role, Content: m.Content, ToolName: m.ToolName}
		for _, c := range m.ToolCalls {
			var tc olToolCall
			tc.Function.Name, tc.Function.Arguments = c.Name, objectArguments(c)
			w.ToolCalls = append(w.ToolCalls, tc)
			names[c.ID] = c.Name
		}
		if m.Role == Tool {
			w.Content = resultText(m)
			if w.ToolName == "" {
				w.ToolName = names[m.ToolCallID]
			}
		}
		req.Messages = append(req.Messages, w)
	}
	if r.ToolChoice.Mode != ToolNone {
		for _, t := range r.Tools {
			if r.ToolChoice.Mode == ToolNamed && t.Name != r.ToolChoice.Name {
				continue
			}
			req.Tools = append(req.Tools, ccTool{Type: "function", Function: ccFunction{Name: t.Name,
				Description: t.Description, Parameters: t.parameters()}})
		}
	}
	if r.Output != nil {
		req.Format = r.Output.Schema
	}
	return req
}

// olFinish maps an Ollama done_reason.
func olFinish(reason string) FinishReason {
	switch reason {
	case "stop", "":
		return FinishStop
	case "length":
		return FinishLength
	}
	return FinishOther
}

// Chat implements Provider.
func (o *ollamaChat) Chat(ctx context.Context, r Request) (Reply, error) {
	req := o.request(r)
	rb, err := o.post(ctx, req)
	if err != nil {
		return Reply{}, err
	}
	out := Reply{Model: req.Model, Backend: o.name, Usage: Usage{Requests: 1}}
	var (
		text  strings.Builder
		calls callBuilder
	)
	take := func(rep *olReply) error {
		if rep.Error != "" {
			return reportedError("", rep.Error)
		}
		if rep.Model != "" {
			out.Model = rep.Model
		}
		if m := rep.Message; m != nil {
			if m.Content != "" {
				text.WriteString(m.Content)
				if r.OnDelta != nil {
					r.OnDelta(Delta{Text: m.Content})
				}
			}
			for _, tc := range m.ToolCalls {
				// Each call arrives whole: its own slot.
				calls.piece(len(calls.calls), true, tc.ID, tc.Function.Name, string(tc.Function.Arguments), r.OnDelta)
			}
		}
		if rep.Done {
			out.StopReason = rep.DoneReason
			out.Usage.PromptTokens, out.Usage.CompletionTokens = rep.PromptEvalCount, rep.EvalCount
		}
		return nil
	}
	if !req.Stream || rb.json() {
		// Unstreamed, or a stream request answered with one JSON document.
		var rep olReply
		if err := rb.decode(&rep); err != nil {
			return Reply{}, err
		}
		if err := take(&rep); err != nil {
			return Reply{}, err
		}
		if rep.Message == nil {
			return Reply{}, rb.malformed("no message in the reply")
		}
	} else {
		done := false
		err := rb.lines(func(line []byte) (bool, error) {
			var rep olReply
			if err := json.Unmarshal(line, &rep); err != nil {
				return false, rb.malformed("stream line is not JSON the provider's way: %v", err)
			}
			if err := take(&rep); err != nil {
				return false, err
			}
			done = rep.Done
			return !done, nil
		})
		if err != nil {
			return Reply{}, err
		}
		if !done {
			return Reply{}, rb.malformed("stream ended before done")
		}
	}
	out.Content = text.String()
	out.ToolCalls, out.NamelessCalls = calls.done()
	out.FinishReason = olFinish(out.StopReason)
	if len(out.ToolCalls) > 0 {
		out.FinishReason = FinishToolCalls
	}
	return out, nil
}
