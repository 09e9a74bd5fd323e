package config

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestContextBufferNoteKeys: platform.context_buffer.note_ttl and max_notes
// (how long and how many notes of removed histories wait for their
// conversation to go on) are organism.yaml keys with documented defaults:
// note_ttl 30 days, max_notes max_threads but at least 1000.
func TestContextBufferNoteKeys(t *testing.T) {
	tests := []struct {
		name    string
		src     string
		want    ContextBuffer
		wantErr string
	}{
		{name: "defaults", src: "organism: {name: o}",
			want: ContextBuffer{MaxSlotsPerThread: 10000, MaxThreads: 1000, TTLHours: 24,
				NoteTTL: Duration(30 * 24 * time.Hour), MaxNotes: 1000}},
		{name: "max_notes follows max_threads", src: "platform: {context_buffer: {max_threads: 5000}}",
			want: ContextBuffer{MaxSlotsPerThread: 10000, MaxThreads: 5000, TTLHours: 24,
				NoteTTL: Duration(30 * 24 * time.Hour), MaxNotes: 5000}},
		{name: "max_notes at least 1000", src: "platform: {context_buffer: {max_threads: 10}}",
			want: ContextBuffer{MaxSlotsPerThread: 10000, MaxThreads: 10, TTLHours: 24,
				NoteTTL: Duration(30 * 24 * time.Hour), MaxNotes: 1000}},
		{name: "written", src: "platform:\n  context_buffer:\n    note_ttl: 72h\n    max_notes: 50\n",
			want: ContextBuffer{MaxSlotsPerThread: 10000, MaxThreads: 1000, TTLHours: 24,
				NoteTTL: Duration(72 * time.Hour), MaxNotes: 50}},
		{name: "zero max_notes", src: "platform:\n  context_buffer:\n    max_notes: 0\n",
			wantErr: "/o/organism.yaml:3: platform.context_buffer.max_notes: must be positive, got 0"},
		{name: "negative note_ttl", src: "platform:\n  context_buffer:\n    note_ttl: -1h\n",
			wantErr: "/o/organism.yaml:3: platform.context_buffer.note_ttl: must be positive, got -1h0m0s"},
		{name: "not a duration", src: "platform:\n  context_buffer:\n    note_ttl: forever\n",
			wantErr: "/o/organism.yaml:3: platform.context_buffer.note_ttl: want a duration"},
		{name: "unknown key", src: "platform:\n  context_buffer:\n    max_note: 5\n",
			wantErr: "/o/organism.yaml:3: platform.context_buffer: unknown key \"max_note\" (did you mean \"max_notes\"?)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := Parse("/o/organism.yaml", []byte(tt.src))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Parse: %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(tt.want, o.Platform.ContextBuffer); diff != "" {
				t.Errorf("context_buffer (-want +got):\n%s", diff)
			}
		})
	}
}
