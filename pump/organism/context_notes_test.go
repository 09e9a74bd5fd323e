package organism

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// TestContextBufferNoteKeysReachTheBuffer: platform.context_buffer's
// note_ttl and max_notes bound the organism's notes of removed histories.
func TestContextBufferNoteKeysReachTheBuffer(t *testing.T) {
	tests := []struct {
		name         string
		yaml         string
		wantMaxNotes int
		wantNoteTTL  time.Duration
	}{
		{"defaults", "", 1000, 30 * 24 * time.Hour},
		{"written", "platform: {context_buffer: {note_ttl: 72h, max_notes: 50}}\n", 50, 72 * time.Hour},
		{"from max_threads", "platform: {context_buffer: {max_threads: 3000}}\n", 3000, 30 * 24 * time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := config.Parse("organism.yaml", []byte("organism: {name: notes}\n"+tt.yaml))
			if err != nil {
				t.Fatal(err)
			}
			o, err := New(cfg, Options{Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := o.Shutdown(context.Background()); err != nil {
					t.Error(err)
				}
			})
			st := o.history.Stats()
			got := []any{st.MaxNotes, st.NoteTTL}
			if diff := cmp.Diff([]any{tt.wantMaxNotes, tt.wantNoteTTL}, got); diff != "" {
				t.Errorf("buffer's note bounds (-want +got):\n%s", diff)
			}
		})
	}
}
