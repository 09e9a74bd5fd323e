package llm

// Role is the author of a chat message.
type Role string

// The chat roles.
const (
	// System messages instruct the model (constitution, prompt, peers).
	System Role = "system"
	// User messages are what the agent receives.
	User Role = "user"
	// Assistant messages are what the model answered before.
	Assistant Role = "assistant"
)

// Message is one chat message.
type Message struct {
	Role    Role
	Content string
}

// Request is one chat completion request.
type Request struct {
	// Model is the model asked for; "" lets each backend use its own default.
	Model string
	// Messages are sent in order.
	Messages []Message
	// MaxTokens caps the completion (0: the provider's default; anthropic
	// requires one and gets 4096).
	MaxTokens int
	// Temperature is the sampling temperature; nil leaves the provider's.
	Temperature *float64
	// OnDelta, when set, asks for a streamed reply and receives each text
	// delta as it arrives (on the request's goroutine).
	OnDelta func(delta string)
	// Agent and Thread attribute the usage (both optional).
	Agent, Thread string
}

// Usage counts the tokens of one or more requests.
type Usage struct {
	PromptTokens     int
	CompletionTokens int
	Requests         int
}

// Total returns prompt plus completion tokens.
func (u Usage) Total() int { return u.PromptTokens + u.CompletionTokens }

// add returns u plus v.
func (u Usage) add(v Usage) Usage {
	return Usage{PromptTokens: u.PromptTokens + v.PromptTokens, CompletionTokens: u.CompletionTokens + v.CompletionTokens,
		Requests: u.Requests + v.Requests}
}

// Reply is a completed chat request.
type Reply struct {
	// Content is the model's text.
	Content string
	// Model is the model that answered.
	Model string
	// Backend names the backend that answered.
	Backend string
	// FinishReason is the provider's stop reason.
	FinishReason string
	// Usage is the request's token usage (Requests is 1).
	Usage Usage
}

// estimateTokens is the bucket's estimate of a request: about four characters
// a token, plus the completion it may produce.
func estimateTokens(r Request) int {
	n := 0
	for _, m := range r.Messages {
		n += len(m.Content)
	}
	return n/4 + max(r.MaxTokens, 0) + 1
}
