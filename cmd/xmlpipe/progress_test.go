package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestProgress: on a terminal the line redraws in place, throttled except
// for the final count, pads over a longer previous line and is erased by
// Done; off a terminal nothing is written.
func TestProgress(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	type update struct {
		after       time.Duration
		done, total int64
	}
	tests := []struct {
		name    string
		tty     bool
		updates []update
		want    string
	}{
		{"not a terminal", false, []update{{0, 1, 10}, {time.Second, 10, 10}}, ""},
		{"throttled", true, []update{{0, 0, 10}, {50 * time.Millisecond, 5, 10}, {150 * time.Millisecond, 6, 10}},
			"\rverifying 0/10 (0%)\rverifying 6/10 (60%)" + "\r" + strings.Repeat(" ", 20) + "\r"},
		{"final count always drawn", true, []update{{0, 1, 2}, {time.Millisecond, 2, 2}},
			"\rverifying 1/2 (50%)\rverifying 2/2 (100%)" + "\r" + strings.Repeat(" ", 20) + "\r"},
		{"unknown total, shorter line padded", true, []update{{0, 1000, 0}, {time.Second, 7, 0}},
			"\rverifying 1000\rverifying 7   " + "\r" + strings.Repeat(" ", 11) + "\r"},
		{"nothing drawn, nothing erased", true, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			now := t0
			p := &progress{w: &out, tty: tt.tty, label: "verifying", now: func() time.Time { return now }}
			for _, u := range tt.updates {
				now = t0.Add(u.after)
				p.Update(u.done, u.total)
			}
			p.Done()
			p.Done() // a second Done writes nothing
			if d := cmp.Diff(tt.want, out.String()); d != "" {
				t.Errorf("output (-want +got):\n%q\n%s", out.String(), d)
			}
		})
	}
}

// TestProgressOffTerminal: newProgress on a pipe or a buffer is inactive.
func TestProgressOffTerminal(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	var b strings.Builder
	if newProgress(w, "x").tty || newProgress(&b, "x").tty {
		t.Fatal("a pipe or a buffer is taken for a terminal")
	}
}
