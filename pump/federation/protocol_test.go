package federation

import (
	"bytes"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// TestBuildIsCanonical: an envelope is built in its exclusive C14N, so
// envsig.Sign signs its bytes as they are (no parse on the way out). (A '>'
// in an attribute, which xmltext escapes and C14N does not, is the one
// exception: Sign parses such an envelope.)
func TestBuildIsCanonical(t *testing.T) {
	sent := time.Date(2026, 11, 27, 5, 0, 0, 123456789, time.UTC)
	for _, e := range []*envelope{
		{From: "a", To: "echo", Thread: "t", Link: link{ID: "x", Kind: KindCall, Sent: sent, Traceparent: "00-ab"},
			Payload: []byte(`<Echo xmlns=""><Text>a &amp; b &lt; c</Text></Echo>`)},
		{From: "a&b", Thread: "t\"q", Link: link{ID: "y", Kind: KindHuh, Ref: "t", Error: "no <way \"out\"\t &", Sent: sent}},
		{From: "a", Thread: "t", Link: link{ID: "z", Kind: KindReply, Ref: "t", Sent: sent},
			Payload: []byte(`<r:R xmlns:r="urn:r"><r:x a="1"></r:x></r:R>`)},
		{Thread: "t", Link: link{ID: "w", Kind: KindEnd, Ref: "t", Sent: sent}},
	} {
		b := e.build()
		canon, err := stage.Canonicalize(b)
		if err != nil {
			t.Fatalf("build: %v\n%s", err, b)
		}
		if !bytes.Equal(canon, b) {
			t.Errorf("build is not canonical:\n got %s\nC14N %s", b, canon)
		}
		if !stage.IsExcC14N(b) {
			t.Errorf("stage.IsExcC14N does not prove the built envelope canonical:\n%s", b)
		}
	}
}
