package federation

import (
	"bytes"
	"crypto/ed25519"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump/federation/envsig"

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
		{From: "a", To: "echo", Thread: "t", Link: link{ID: "h", Kind: KindCall, Sent: sent, Hops: 12, Traceparent: "00-ab"},
			Payload: []byte(`<Echo xmlns=""><Text>deep</Text></Echo>`)},
		{From: "a", Thread: "t", Link: link{ID: "r", Kind: KindHuh, Ref: "t", Error: "too deep", Reason: ReasonTooDeep, Sent: sent}},
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

// TestHopsOnTheWire: a call's hop count and a huh's reason travel in the
// signed <link> and read back as written, by the canonical reader and the
// decoder alike; an envelope of a peer that writes neither (an earlier
// version) reads as 0 hops and no reason.
func TestHopsOnTheWire(t *testing.T) {
	sent := time.Date(2026, 11, 27, 5, 0, 0, 0, time.UTC)
	key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize))
	for _, e := range []*envelope{
		{From: "a", To: "echo", Thread: "t", Link: link{ID: "h", Kind: KindCall, Sent: sent, Hops: 12},
			Payload: []byte(`<Echo xmlns=""><Text>deep</Text></Echo>`)},
		{From: "a", To: "echo", Thread: "t", Link: link{ID: "o", Kind: KindCall, Sent: sent},
			Payload: []byte(`<Echo xmlns=""><Text>old</Text></Echo>`)},
		{From: "a", Thread: "t", Link: link{ID: "r", Kind: KindHuh, Ref: "t", Error: "too deep", Reason: ReasonTooDeep, Sent: sent}},
	} {
		// Signed, as on the link: parse reads it with the canonical reader.
		b, err := envsig.Sign(key, e.build())
		if err != nil {
			t.Fatal(err)
		}
		if _, _, _, _, ok := readCanonical(b); !ok {
			t.Fatalf("the canonical reader does not read %s", b)
		}
		want := *e
		want.PayloadName, want.PayloadNS = "Echo", ""
		if len(e.Payload) == 0 {
			want.PayloadName, want.PayloadNS, want.Payload = "end", NS, []byte(`<end xmlns="`+NS+`"></end>`)
		}
		for name, read := range map[string]func([]byte) (*envelope, error){"parse": parse, "decode": decode} {
			got, err := read(b)
			if err != nil {
				t.Fatalf("%s %s: %v", name, b, err)
			}
			if diff := cmp.Diff(&want, got, cmp.AllowUnexported(envelope{}, link{})); diff != "" {
				t.Errorf("%s %s (-want +got):\n%s", name, b, diff)
			}
		}
	}
}
