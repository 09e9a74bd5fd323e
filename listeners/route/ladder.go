package route

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/xml-pipeline/xmlpipe/gen"
	"github.com/xml-pipeline/xmlpipe/listeners/llm"
)

// Chatter sends one chat request: *llm.Router is one (the organism's llm:
// section), so the ladder's models are served by the configured backends
// with their retries, limits and usage accounting.
type Chatter interface {
	Chat(ctx context.Context, req llm.Request) (llm.Reply, error)
}

// Ladder is the form filler with models (seed 000 §10.2: "model ladder:
// cheap model first, escalate on failure"). It asks Models in order for the
// payload as structured output (llm.Request.Output with the payload type's
// JSON Schema, gen.JSONSchema) and checks each answer with CheckPayload —
// codec.AppendJSON, then the listener's XSD. The first answer that passes
// is the payload; an answer that fails, or a call that fails, sends the
// request to the next model, told what was wrong with the previous answer.
// When every model failed, the error is a *FillError listing each attempt.
type Ladder struct {
	// LLM serves the models.
	LLM Chatter
	// Models are tried in order: the cheap one first.
	Models []string
	// MaxTokens caps each answer (default 1024).
	MaxTokens int
	// Logger receives a line per failed attempt (default slog.Default()).
	Logger *slog.Logger
}

// fillInstructions is the system prompt of a fill request.
const fillInstructions = `You fill in the request for one tool of an organism of agents.
Tool: %s
What it does: %s
Answer with one JSON object matching the given schema and nothing else.
Take every value from the request below; leave out optional fields it does not mention; never invent a value the request does not give.`

// Fill asks the ladder's models in turn for c's payload.
func (l Ladder) Fill(ctx context.Context, need string, c Capability) (Filled, error) {
	fe := &FillError{Capability: c.Name}
	if c.Payload == nil {
		fe.Attempts = append(fe.Attempts, Attempt{By: "ladder", Err: fmt.Errorf("%s has no payload type", c.Name)})
		return Filled{}, fe
	}
	if l.LLM == nil || len(l.Models) == 0 {
		fe.Attempts = append(fe.Attempts, Attempt{By: "ladder", Err: errors.New("no model configured")})
		return Filled{}, fe
	}
	log := l.Logger
	if log == nil {
		log = slog.Default()
	}
	schema, err := json.Marshal(gen.JSONSchema(c.Payload.Model()))
	if err != nil {
		fe.Attempts = append(fe.Attempts, Attempt{By: "ladder", Err: err})
		return Filled{}, fe
	}
	maxTokens := l.MaxTokens
	if maxTokens <= 0 {
		maxTokens = 1024
	}
	msgs := []llm.Message{
		{Role: llm.System, Content: fmt.Sprintf(fillInstructions, c.Name, c.Description)},
		{Role: llm.User, Content: need},
	}
	zero := 0.0
	for _, model := range l.Models {
		if err := ctx.Err(); err != nil {
			fe.Attempts = append(fe.Attempts, Attempt{By: model, Err: err})
			return Filled{}, fe
		}
		rep, err := l.LLM.Chat(ctx, llm.Request{Model: model, Messages: msgs, MaxTokens: maxTokens, Temperature: &zero,
			Output: &llm.OutputSchema{Name: outputName(c.Name), Description: "the request for " + c.Name, Schema: schema}})
		var payload []byte
		if err == nil {
			payload, err = CheckPayload(c, []byte(rep.Content))
			if err != nil {
				// The next model sees the answer that failed and why.
				msgs = append(msgs, llm.Message{Role: llm.Assistant, Content: rep.Content},
					llm.Message{Role: llm.User, Content: "That answer does not fit the schema: " + err.Error() +
						". Answer again with one JSON object that matches it."})
			}
		}
		if err != nil {
			fe.Attempts = append(fe.Attempts, Attempt{By: model, Err: err})
			log.Info("route: fill attempt failed", "listener", c.Name, "model", model, "error", err)
			continue
		}
		fe.Attempts = append(fe.Attempts, Attempt{By: model})
		return Filled{Payload: payload, JSON: []byte(rep.Content), By: model, Attempts: fe.Attempts}, nil
	}
	return Filled{}, fe
}

// outputName maps a listener name to a structured-output name
// (^[a-zA-Z0-9_-]{1,64}$).
func outputName(name string) string {
	var b strings.Builder
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
		if b.Len() >= 64 {
			break
		}
	}
	if b.Len() == 0 {
		return llm.DefaultOutputName
	}
	return b.String()
}
