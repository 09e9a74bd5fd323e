package llm

import (
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// Weather is a caller's payload whose one string field is not all it
// holds: a text answer would leave its TempC made up (0).
type Weather struct {
	City  string
	TempC int
}

// Shout is a caller's payload that takes text: its other field may be
// left empty.
type Shout struct {
	Message string
	Sender  string `xml:",omitempty"`
}

// TestAnswerInCallersPayloadUnlessTextIsAll: an agent called by a listener
// answers in that listener's payload, asked for as structured output, when
// a text answer could not fill it — a Weather's City beside a required
// TempC — and in text when the payload's text field is all it needs.
func TestAnswerInCallersPayloadUnlessTextIsAll(t *testing.T) {
	for _, tc := range []struct {
		name    string
		caller  *xmlpipe.PayloadType
		content string
		// want is the answer's XML; wantSchema whether the model was asked
		// for the caller's payload.
		want       string
		wantSchema bool
	}{
		{"one string among others", mustPT[Weather](t), `{"City":"Oslo","TempC":-3}`,
			`<Weather xmlns=""><City>Oslo</City><TempC>-3</TempC></Weather>`, true},
		{"text is all it needs", mustPT[Shout](t), "HELLO", `<Shout xmlns=""><Message>HELLO</Message></Shout>`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newLoopRig(t, Reply{Content: tc.content})
			r.a.Threads = plannerThreads{}
			lookup := r.a.Lookup
			r.a.Lookup = func(name string) (*xmlpipe.PayloadType, bool) {
				if name == "planner" {
					return tc.caller, true
				}
				return lookup(name)
			}
			resp, ok := r.deliver("planner", "go", "").(*xmlpipe.RespondResponse)
			if !ok {
				t.Fatalf("response %#v", resp)
			}
			var got string
			switch p := resp.Payload.(type) {
			case *xmlpipe.Encoded:
				got = string(p.XML)
			default:
				b, err := tc.caller.AppendPayload(nil, p)
				if err != nil {
					t.Fatalf("payload %#v: %v", p, err)
				}
				got = string(b)
			}
			if got != tc.want {
				t.Errorf("answer %s, want %s", got, tc.want)
			}
			out := r.model.requests()[0].Output
			if gotSchema := out != nil && out.Name == tc.caller.Name() && strings.Contains(string(out.Schema), `"TempC"`); gotSchema != tc.wantSchema {
				t.Errorf("asked for output %+v, want the caller's payload: %v", out, tc.wantSchema)
			}
		})
	}
}
