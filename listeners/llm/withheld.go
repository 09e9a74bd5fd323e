package llm

import (
	"fmt"
	"strings"
)

// withheldAnswer says why rep holds no answer when the provider cut it
// before any text (out of tokens: a reasoning model can spend max_tokens
// on thinking alone), withheld it (a content filter), the model refused
// without a word or simply stopped with nothing to say: a caller never
// gets an empty answer. "" when rep has text or calls.
func withheldAnswer(rep Reply, maxTokens int) string {
	if strings.TrimSpace(rep.Content) != "" || len(rep.ToolCalls) > 0 {
		return ""
	}
	stop := ""
	if rep.StopReason != "" {
		stop = fmt.Sprintf(" (stop reason %q)", rep.StopReason)
	}
	switch rep.FinishReason {
	case FinishLength:
		return "the model's reply was cut at " + tokenLimit(maxTokens) + " before any answer" + stop
	case FinishContentFilter:
		return "the provider withheld the model's answer" + stop
	case FinishRefusal:
		return "the model declined to answer" + stop
	}
	return "the model's reply was empty" + stop
}

// cutAnswerNote begins the feedback on a structured answer that does not
// fit because the provider cut it at the token limit.
func cutAnswerNote(maxTokens int) string {
	return "Your answer was cut off at " + tokenLimit(maxTokens) + " before it was complete; keep it shorter. "
}

// tokenLimit names the output token limit a reply was cut at.
func tokenLimit(maxTokens int) string {
	if maxTokens > 0 {
		return fmt.Sprintf("max_tokens (%d)", maxTokens)
	}
	return "the output token limit"
}

// cutOff reports whether the provider cut rep at the token limit. A reply
// with tool calls is finished as FinishToolCalls, so its own word is read
// too ("length", "max_tokens").
func cutOff(rep Reply) bool {
	return rep.FinishReason == FinishLength || ccFinish(rep.StopReason) == FinishLength ||
		amFinish(rep.StopReason) == FinishLength
}
