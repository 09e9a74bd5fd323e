package organism

import (
	"context"
	"testing"

	"github.com/xml-pipeline/xmlpipe/registry/store"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// TestRecoveryTurnOf: a listener's message recovered after a crash belongs
// to the turn begun by the last outside message delivered on its
// conversation before it — not one of another conversation, not one
// journaled after it — so the conversation's events keep their ids.
func TestRecoveryTurnOf(t *testing.T) {
	s, err := store.Open(t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	conv, other := stage.NewThreadID(), stage.NewThreadID()
	appendMsg := func(c string, dir store.Direction, listener string) int64 {
		t.Helper()
		env := stage.AppendEnvelope(nil, "console", "greeter", c, []byte(`<Greeting xmlns=""><Name>n</Name></Greeting>`))
		seq, err := s.AppendSync(context.Background(), store.Entry{Thread: c, Conversation: c, Direction: dir, Kind: store.Message,
			From: "console", To: "greeter", Listener: listener, PayloadTag: "Greeting", Bytes: env})
		if err != nil {
			t.Fatal(err)
		}
		return seq
	}
	first := appendMsg(conv, store.Inbound, "greeter")
	inFirst := appendMsg(conv, store.Outbound, "greeter")
	appendMsg(other, store.Inbound, "greeter")
	appendMsg(conv, store.Inbound, "") // refused: began no turn
	second := appendMsg(conv, store.Inbound, "greeter")
	inSecond := appendMsg(conv, store.Outbound, "greeter")
	turns := turnSeqs{}
	for _, tc := range []struct {
		seq, want int64
	}{
		{inFirst, first},
		{inSecond, second},
		{first - 1, 0},
	} {
		got, err := turns.turnOf(s, conv, tc.seq)
		if err != nil || got != tc.want {
			t.Errorf("turnOf(seq %d) = %d, %v; want %d", tc.seq, got, err, tc.want)
		}
	}
}
