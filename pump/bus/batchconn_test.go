package bus

import (
	"bytes"
	"net"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
)

// recordingConn is a net.Conn that records each Write.
type recordingConn struct {
	net.Conn
	writes [][]byte
}

func (r *recordingConn) Write(p []byte) (int, error) {
	r.writes = append(r.writes, bytes.Clone(p))
	return len(p), nil
}

// TestBatchConn checks what reaches the network, write by write: data
// frames between begin and end in one write, control frames at once after
// what was gathered, nothing held back outside a batch.
func TestBatchConn(t *testing.T) {
	text := func(s string) string { return "\x81" + s } // FIN + text opcode
	closeFrame := "\x88\x02\x03\xe8"                    // FIN + close opcode
	big := text(strings.Repeat("x", maxBatchBytes))
	tests := []struct {
		name  string
		steps []string // "begin", "end", or a frame to write
		want  []string
	}{
		{"no batch: each write goes out", []string{text("a"), text("b")}, []string{text("a"), text("b")}},
		{"batch gathers", []string{"begin", text("a"), text("b"), text("c"), "end"},
			[]string{text("a") + text("b") + text("c")}},
		{"control frame flushes, in order", []string{"begin", text("a"), closeFrame, text("b"), "end"},
			[]string{text("a"), closeFrame, text("b")}},
		{"over the limit flushes first", []string{"begin", text("a"), big, text("b"), "end"},
			[]string{text("a"), big, text("b")}},
		{"empty batch writes nothing", []string{"begin", "end"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recordingConn{}
			b := &batchConn{Conn: rec}
			for _, st := range tt.steps {
				switch st {
				case "begin":
					b.begin()
				case "end":
					if err := b.end(); err != nil {
						t.Fatal(err)
					}
				default:
					if n, err := b.Write([]byte(st)); err != nil || n != len(st) {
						t.Fatalf("write: %d, %v", n, err)
					}
				}
			}
			if len(rec.writes) != len(tt.want) {
				t.Fatalf("%d writes, want %d", len(rec.writes), len(tt.want))
			}
			for i, w := range tt.want {
				if string(rec.writes[i]) != w {
					t.Errorf("write %d: %d bytes %.20q…, want %d bytes %.20q…", i, len(rec.writes[i]), rec.writes[i], len(w), w)
				}
			}
		})
	}
}

// TestBatchConnCloseMidBatch: a close frame written by another goroutine
// (conn.close) while the writer is gathering flushes what was gathered
// first, and what the writer gathers after it goes out at end: nothing is
// stranded, nothing reordered.
func TestBatchConnCloseMidBatch(t *testing.T) {
	text := func(s string) string { return "\x81" + s }
	closeFrame := "\x88\x02\x03\xe8"
	rec := &recordingConn{}
	b := &batchConn{Conn: rec}
	b.begin()
	for _, f := range []string{text("a"), text("b")} {
		if _, err := b.Write([]byte(f)); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error)
	go func() {
		_, err := b.Write([]byte(closeFrame))
		done <- err
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := b.Write([]byte(text("c"))); err != nil {
		t.Fatal(err)
	}
	if err := b.end(); err != nil {
		t.Fatal(err)
	}
	want := []string{text("a") + text("b"), closeFrame, text("c")}
	if len(rec.writes) != len(want) {
		t.Fatalf("writes %q, want %q", rec.writes, want)
	}
	for i, w := range want {
		if string(rec.writes[i]) != w {
			t.Errorf("write %d: %q, want %q", i, rec.writes[i], w)
		}
	}
}

// TestWSPipelinedOrder: requests sent back to back are answered in order
// whatever the writer gathers into one write. n stays below the send queue
// (DefaultSendQueue), so a writer starved of CPU while the client has not
// read yet never counts as a slow client.
func TestWSPipelinedOrder(t *testing.T) {
	f := newFixture(t)
	c := f.dial("/ws", f.loginAs("alice", auth.Viewer))
	readFrame(t, c) // connected
	const n = DefaultSendQueue - 16
	for i := range n {
		writeFrame(t, c, frame{"type": "ping", "id": i})
	}
	for i := range n {
		got := readFrame(t, c)
		if got["type"] != "pong" || got["id"] != float64(i) {
			t.Fatalf("reply %d: %v, want pong %d", i, got, i)
		}
	}
}
