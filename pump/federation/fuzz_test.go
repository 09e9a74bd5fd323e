package federation

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/schemas"
)

// FuzzParse feeds parse (what a verified envelope from a peer is read
// with) and the frame decoder arbitrary bytes: no input may panic, and an
// envelope that parses has a link id and kind and a payload inside it.
func FuzzParse(f *testing.F) {
	e := &envelope{From: "a", To: "echo", Thread: "6f1c2c4e-1b7a-4a51-9d0e-1b2c3d4e5f60",
		Link: link{ID: "x", Kind: KindCall, Sent: time.Unix(0, 0)}, Payload: []byte(`<Echo xmlns=""><Text>hi</Text></Echo>`)}
	f.Add(e.build())
	f.Add((&envelope{Thread: "t", Link: link{ID: "y", Kind: KindEnd, Ref: "t", Sent: time.Unix(0, 0)}}).build())
	f.Add([]byte(`<message xmlns="` + schemas.EnvelopeNS + `"><meta><from>a</from><thread>t</thread></meta></message>`))
	f.Add([]byte(`{"type":"ack","id":"x"}`))
	f.Add([]byte(`<a><b><c/></b></a>`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var fr frame
		_ = json.Unmarshal(b, &fr)
		e, err := parse(b)
		if err != nil {
			return
		}
		if e.Link.ID == "" || e.Link.Kind == "" {
			t.Fatalf("parsed without a link id or kind: %+v", e.Link)
		}
		if len(e.Payload) > len(b) {
			t.Fatalf("payload of %d bytes from %d", len(e.Payload), len(b))
		}
		_, _, _ = shapeOf(e.Payload)
	})
}
