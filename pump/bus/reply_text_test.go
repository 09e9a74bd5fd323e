package bus

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/listeners/hello"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/bus/wire"
)

// weatherAnswer is a structured answer with one string field among others.
type weatherAnswer struct {
	City  string
	TempC int
}

// TestReplyTextOnlyForAWholeText: a reply frame's text is the answer's text
// only when its text field carries all the answer holds (a
// ShoutedResponse's Message); a Weather's City beside its TempC is not the
// answer — the frame has no text, and the client reads the payload.
func TestReplyTextOnlyForAWholeText(t *testing.T) {
	for _, tc := range []struct {
		name    string
		payload any
		want    string
	}{
		{"text payload", &hello.ShoutedResponse{Message: "HELLO, DAN!"}, "HELLO, DAN!"},
		{"one string among others", &weatherAnswer{City: "Oslo", TempC: -3}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, ok := appendEventFrame(nil, pump.Event{Kind: pump.EventReply, Conversation: "t1", From: "weather",
				Payload: tc.payload}, false)
			if !ok {
				t.Fatal("no frame")
			}
			var r wire.Reply
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatalf("%v: %s", err, b)
			}
			if d := cmp.Diff(tc.want, r.Text); d != "" {
				t.Errorf("Reply.Text (-want +got):\n%s", d)
			}
		})
	}
}
