package federation

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump/federation/envsig"
	"github.com/xml-pipeline/xmlpipe/schemas"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// FuzzParse feeds parse (what a verified envelope from a peer is read
// with) and the frame decoder arbitrary bytes: no input may panic, an
// envelope that parses has a link id and kind and a payload inside it, and
// what the canonical reader reads of a well-formed document (the only kind
// parse sees: Verify parsed it before) the decoder reads alike.
func FuzzParse(f *testing.F) {
	key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize))
	for _, e := range []*envelope{
		{From: "a", To: "echo", Thread: "t", Link: link{ID: "x", Kind: KindCall, Sent: time.Unix(0, 0), Traceparent: "00-ab"},
			Payload: []byte(`<Echo xmlns=""><Text>a &amp; b &lt; c</Text></Echo>`)},
		{From: "a&b", Thread: "t\"q", Link: link{ID: "y", Kind: KindHuh, Ref: "t", Error: "no <way> \"out\"\t", Sent: time.Unix(0, 0)}},
		{From: "a", Thread: "t", Link: link{ID: "z", Kind: KindReply, Ref: "t", Sent: time.Unix(0, 0)},
			Payload: []byte(`<r:R xmlns:r="urn:r"><r:x a="1"></r:x></r:R>`)},
		{From: "a", Thread: "t", Link: link{ID: "w", Kind: KindReply, Ref: "t", Sent: time.Unix(0, 0)},
			Payload: []byte(`<R xmlns="urn:r"><?pi x?><x></x></R>`)},
		{From: "a", To: "echo", Thread: "t", Link: link{ID: "h", Kind: KindCall, Sent: time.Unix(0, 0), Hops: 7},
			Payload: []byte(`<Echo xmlns=""><Text>deep</Text></Echo>`)},
		{From: "a", Thread: "t", Link: link{ID: "r", Kind: KindHuh, Ref: "t", Error: "deep", Reason: ReasonTooDeep, Sent: time.Unix(0, 0)}},
	} {
		signed, err := envsig.Sign(key, e.build())
		if err != nil {
			f.Fatal(err)
		}
		f.Add(signed)
	}
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
		if _, _, _, _, ok := readCanonical(b); ok {
			if _, cerr := stage.Canonicalize(b); cerr == nil {
				d, derr := decode(b)
				if (err == nil) != (derr == nil) || err == nil && !reflect.DeepEqual(e, d) {
					t.Fatalf("the canonical reader read %+v (%v), the decoder %+v (%v)", e, err, d, derr)
				}
			}
		}
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

// TestCanonicalReaderReadsSignedEnvelopes: what a gateway sends is read by
// the canonical reader (not the decoder), as the decoder reads it; a
// prefixed payload or a processing instruction in it is left to the
// decoder.
func TestCanonicalReaderReadsSignedEnvelopes(t *testing.T) {
	key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{9}, ed25519.SeedSize))
	for _, tc := range []struct {
		name      string
		e         *envelope
		canonical bool
	}{
		{"call", &envelope{From: "a", To: "echo", Thread: "t", Link: link{ID: "x", Kind: KindCall, Sent: time.Unix(5, 6).UTC(),
			Traceparent: "00-ab"}, Payload: []byte(`<Echo xmlns=""><Text a="&quot;q&quot;">a &amp; b &lt; c</Text></Echo>`)}, true},
		{"huh with escapes", &envelope{From: "a&b", Thread: "t\"q", Link: link{ID: "y", Kind: KindHuh, Ref: "t",
			Error: "no <way> \"out\"\t\n", Sent: time.Unix(0, 0).UTC()}}, true},
		{"namespaced payload", &envelope{From: "a", Thread: "t", Link: link{ID: "v", Kind: KindReply, Ref: "t", Sent: time.Unix(0, 0).UTC()},
			Payload: []byte(`<R xmlns="urn:r"><x></x></R>`)}, true},
		{"prefixed payload", &envelope{From: "a", Thread: "t", Link: link{ID: "z", Kind: KindReply, Ref: "t", Sent: time.Unix(0, 0).UTC()},
			Payload: []byte(`<r:R xmlns:r="urn:r"><r:x></r:x></r:R>`)}, false},
		{"processing instruction", &envelope{From: "a", Thread: "t", Link: link{ID: "w", Kind: KindReply, Ref: "t", Sent: time.Unix(0, 0).UTC()},
			Payload: []byte(`<R><?pi x?></R>`)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			signed, err := envsig.Sign(key, tc.e.build())
			if err != nil {
				t.Fatal(err)
			}
			if _, _, _, _, ok := readCanonical(signed); ok != tc.canonical {
				t.Fatalf("read by the canonical reader: %v, want %v\n%s", ok, tc.canonical, signed)
			}
			got, err := parse(signed)
			if err != nil {
				t.Fatal(err)
			}
			want, err := decode(signed)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("parse %+v\ndecode %+v", got, want)
			}
		})
	}
}
