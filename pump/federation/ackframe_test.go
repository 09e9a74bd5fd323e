package federation

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestAckFrameCodec: the link's text frames encode and decode exactly as
// encoding/json does them, acknowledgements included, whatever their
// spelling; and an acknowledgement, the frame of every envelope, costs one
// allocation either way (its bytes, its id) instead of encoding/json's
// reflection.
func TestAckFrameCodec(t *testing.T) {
	const id = "0c6f6f0e-4b8e-4e0e-9a39-1d3c7f8f2a11"
	frames := []frame{
		{Type: frameAck, ID: id},
		{Type: frameAck, ID: id, Duplicate: true},
		{Type: frameAck, ID: "a<b>&c"},
		{Type: frameAck, ID: `quote"back\slash`},
		{Type: frameAck, ID: "é"},
		{Type: frameAck},
		{Type: frameNack, ID: id, Error: "bad signature", Reason: ReasonTooDeep},
		{Type: frameGoodbye},
		{Type: frameHello, Key: "k", Nonce: "n", Organism: "o"},
	}
	for _, f := range frames {
		want, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		if got := f.marshal(); string(got) != string(want) {
			t.Errorf("marshal(%+v) = %s, want %s", f, got, want)
		}
		back, err := decodeFrame(want)
		if err != nil {
			t.Errorf("decodeFrame(%s): %v", want, err)
		}
		if diff := cmp.Diff(f, back); diff != "" {
			t.Errorf("decodeFrame(%s) (-want +got):\n%s", want, diff)
		}
	}
	// Spellings encoding/json accepts decode as it decodes them.
	for _, in := range []string{
		`{"type":"ack","id":"` + id + `"}`,
		`{"type":"ack","id":"` + id + `","duplicate":true}`,
		`{ "type": "ack", "id": "` + id + `" }`,
		`{"TYPE":"ack","ID":"` + id + `"}`,
		`{"type":"ack","id":"\u0061bc"}`,
		`{"type":"ack","id":""}`,
		`{"type":"ack","id":"x"}trailing`,
		`{"type":"ack","id":"x"`,
		`not json`,
		``,
	} {
		var want frame
		wantErr := json.Unmarshal([]byte(in), &want)
		got, err := decodeFrame([]byte(in))
		if (err != nil) != (wantErr != nil) {
			t.Errorf("decodeFrame(%q): error %v, encoding/json's %v", in, err, wantErr)
			continue
		}
		if diff := cmp.Diff(want, got); err == nil && diff != "" {
			t.Errorf("decodeFrame(%q) (-encoding/json +got):\n%s", in, diff)
		}
	}
	ack := frame{Type: frameAck, ID: id}
	wire := ack.marshal()
	if n := testing.AllocsPerRun(100, func() { _ = ack.marshal() }); n > 1 {
		t.Errorf("encoding an ack: %v allocations, want 1", n)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = decodeFrame(wire) }); n > 1 {
		t.Errorf("decoding an ack: %v allocations, want 1", n)
	}
}

// FuzzDecodeFrame feeds a peer's link frames: decodeFrame (with its fast
// path for the plain acknowledgement) reads every input exactly as
// encoding/json does, and what it read marshals to a frame that reads back
// the same.
func FuzzDecodeFrame(f *testing.F) {
	for _, s := range []string{`{"type":"ack","id":"6f1c2c4e-1b7a-4a51-9d0e-1b2c3d4e5f60"}`, `{"type":"ack","id":"a\u0062"}`,
		`{"type":"ack","id":"x","duplicate":true}`, `{"type":"nack","id":"x","error":"no","reason":"too-deep"}`,
		`{"type":"ack","id":""}`, `{"type":"ack","id":"x"} `, `{"TYPE":"ack","id":"x"}`, `{"type":"ack","id":"\xff"}`,
		`{"type":"hello","key":"a2V5","nonce":"bm9uY2U=","organism":"b"}`, `null`, `[]`, `{"type":"ack","id":"x"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := decodeFrame(b)
		var want frame
		wantErr := json.Unmarshal(b, &want)
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("decodeFrame(%q): error %v, encoding/json's %v", b, err, wantErr)
		}
		if err != nil {
			return
		}
		if got != want {
			t.Fatalf("decodeFrame(%q) = %+v, encoding/json %+v", b, got, want)
		}
		back, err := decodeFrame(got.marshal())
		if err != nil || back != got {
			t.Fatalf("%+v marshals to %s, which reads back as %+v (%v)", got, got.marshal(), back, err)
		}
	})
}
