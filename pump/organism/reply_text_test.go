package organism

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/xml-pipeline/xmlpipe/listeners/mcpclient"
	"github.com/xml-pipeline/xmlpipe/pump"
)

// answerOnly is an agent answer: one text field.
type answerOnly struct{ Text string }

// optionalText is a payload built from a field list with optional fields
// (a federation answer typed from its shape): pointers, nil when left out.
type optionalText struct {
	Text  *string
	Count *int64
}

// CalcResult is an answer with several fields and no text field.
type CalcResult struct {
	Value float64
	Count int
}

// weatherAnswer is a structured answer with one string field among others.
type weatherAnswer struct {
	City  string
	TempC int
}

func strPtr(s string) *string { return &s }
func intPtr(n int64) *int64   { return &n }

// TestReplyTextShowsWhatAnEmptyTextHides checks that a reply whose text
// field is not all it carries (a mounted tool's Error, a Weather's TempC
// beside its City) prints as its XML instead of the text alone, while a
// plain text answer, empty or not, prints as its text.
func TestReplyTextShowsWhatAnEmptyTextHides(t *testing.T) {
	for _, tc := range []struct {
		name    string
		payload any
		want    string
	}{
		{"text answer", &answerOnly{Text: "In HTML you would write <b>rain</b>."}, "In HTML you would write <b>rain</b>."},
		{"empty answer", &answerOnly{}, ""},
		// A tool's text beside the tool's name is not all the result holds.
		{"tool text", &mcpclient.ToolResult{Tool: "echo", Text: "hi"},
			`<ToolResult><Tool>echo</Tool><Text>hi</Text></ToolResult>`},
		{"tool error only", &mcpclient.ToolResult{Tool: "fail", Error: "it broke"},
			`<ToolResult><Tool>fail</Tool><Error>it broke</Error></ToolResult>`},
		{"tool note only", &mcpclient.ToolResult{Tool: "big", Notes: []string{"image not carried"}},
			`<ToolResult><Tool>big</Tool><Note>image not carried</Note></ToolResult>`},
		{"optional text", &optionalText{Text: strPtr("hi")}, "hi"},
		{"optional text left out", &optionalText{}, ""},
		{"optional text empty, count given", &optionalText{Text: strPtr(""), Count: intPtr(2)},
			`<optionalText><Text></Text><Count>2</Count></optionalText>`},
		// An answer with several fields prints as its XML without the
		// xmlns="" it carries only inside an envelope (the remote console
		// gets it from the bus without it too).
		{"several fields", &CalcResult{Value: 42, Count: 2}, `<CalcResult><Value>42</Value><Count>2</Count></CalcResult>`},
		// An optional count given as 0 is given: it is more than the text.
		{"optional text empty, count given as 0", &optionalText{Text: strPtr(""), Count: intPtr(0)},
			`<optionalText><Text></Text><Count>0</Count></optionalText>`},
		{"optional text, count left out", &optionalText{Text: strPtr("hi")}, "hi"},
		// One string field beside a number is not the answer: a Weather's
		// City alone would hide its TempC.
		{"one string among others", &weatherAnswer{City: "Oslo", TempC: -3},
			`<weatherAnswer><City>Oslo</City><TempC>-3</TempC></weatherAnswer>`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := replyText(pump.Event{Kind: pump.EventReply, Payload: tc.payload})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("replyText (-want +got):\n%s", diff)
			}
		})
	}
}
