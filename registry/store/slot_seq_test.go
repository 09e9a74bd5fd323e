package store

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestSlotSeqKeptAcrossReopen: the journal seq of the message whose
// handling recorded a slot is kept with its row, so an agent tells two
// messages alike in everything else apart after a restart; a database
// written before the column existed (its slots table without seq) gets it
// at its next Open, its rows at 0, and keeps what is written after.
func TestSlotSeqKeptAcrossReopen(t *testing.T) {
	s, dir := openTest(t, Options{})
	must(t, s.Close())
	// The table as an earlier version left it: no seq column, one row.
	db := rawDB(t, dir)
	for _, q := range []string{
		`ALTER TABLE slots DROP COLUMN seq`,
		`INSERT INTO slots (thread, idx, from_name, to_name, payload_type, raw, time_ns, own_name, is_self_call,
			in_reply_to) VALUES ('old', 0, 'console', 'bot', 'Task', x'3c612f3e', 1, 'bot', 0, '')`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	must(t, db.Close())

	at := time.Unix(0, 2).UTC()
	s = openAt(t, dir, Options{})
	must(t, s.AppendSlot(SlotRow{Thread: "new", From: "console", To: "bot", PayloadType: "Task", Raw: []byte("<a/>"),
		Time: at, OwnName: "bot", Seq: 41}))
	must(t, s.AppendSlot(SlotRow{Thread: "new", Index: 1, From: "bot", PayloadType: "llm.calls", Raw: []byte("[]"),
		Time: at, OwnName: "bot", Seq: 41}))
	must(t, s.Flush(context.Background()))
	must(t, s.Close())

	s = openAt(t, dir, Options{})
	rows, err := s.LoadSlots()
	must(t, err)
	got := map[string][]int64{}
	for _, r := range rows {
		got[r.Thread] = append(got[r.Thread], r.Seq)
	}
	if d := cmp.Diff(map[string][]int64{"old": {0}, "new": {41, 41}}, got); d != "" {
		t.Errorf("seqs by thread after reopening (-want +got):\n%s", d)
	}
}
