package organism

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/llm"
	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// lockedBuffer is a bytes.Buffer safe for the store writer's goroutine
// and the test's.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestLateWritesAfterTheStoreClosedAreQuiet: what a handler the pump
// abandoned at shutdown writes once the organism closed its store — an
// agent's llm_calls row, a history slot — is skipped with a debug line
// that says why, not logged as an error ("store: closed") an operator
// would chase; any other failure of those writes is still an error.
func TestLateWritesAfterTheStoreClosedAreQuiet(t *testing.T) {
	s, err := store.Open(t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	var logs lockedBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	writes := []struct {
		name  string
		write func()
	}{
		{"llm call", func() {
			newCallBook(s, log).observe(llm.CallRecord{Start: time.Now(), Agent: "thinker", Thread: "t", Backend: "b",
				Model: "m", Err: context.Canceled})
		}},
		{"history slot", func() {
			_, _, slots := StateSinks(s, log)
			slots.SlotAppended(registry.Slot{ThreadID: "t", Index: 1, From: "thinker", To: "console", PayloadType: "Answer",
				Raw: []byte("late"), Time: time.Now()})
		}},
	}
	for _, w := range writes {
		t.Run(w.name, func(t *testing.T) {
			before := len(logs.String())
			w.write()
			out := logs.String()[before:]
			if strings.Contains(out, "level=ERROR") || strings.Contains(out, "level=WARN") ||
				!strings.Contains(out, "level=DEBUG") || !strings.Contains(out, "the store closed at shutdown") {
				t.Errorf("log of a write after the store closed:\n%s", out)
			}
		})
	}
}
