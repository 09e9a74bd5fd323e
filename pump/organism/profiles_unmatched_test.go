package organism

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestUnmatchedProfileNames: a name or glob in a profile's listeners: or a
// callable's requires: that matches no listener is warned of with its
// file:line — by UnmatchedProfileNames (what `xmlpipe validate` prints)
// and in the start's log — and not refused: a federation import may
// register it later. Names that match (case-insensitively, by glob, a
// callable's own .call listener) are not warned of.
func TestUnmatchedProfileNames(t *testing.T) {
	dir := t.TempDir()
	cfg := parseIn(t, dir, `organism: {name: unmatched}
profiles:
  calc:
    listeners: [Calculate, calculat, "calculate*", "files-*"]
  peers:
    listeners: [peer.greeter]
listeners:
  - name: calculate
    payload_class: tools.Calculate
    handler: tools.Calculate
    description: Evaluates
    callable:
      description: Evaluates
      parameters: [{name: Expression, required: true}]
      requires: [calculate, slw]
`)
	var mu sync.Mutex
	var logged []string
	o, err := New(cfg, Options{Logger: slog.New(warnLog{mu: &mu, msgs: &logged})})
	if err != nil {
		t.Fatal(err)
	}
	defer shutdown(t, o)
	const later = "matches no listener (a federation import or a listener added while running may register it later)"
	want := []string{
		`organism.yaml:4: profiles.calc.listeners[1]: "calculat" ` + later,
		`organism.yaml:4: profiles.calc.listeners[3]: "files-*" ` + later,
		`organism.yaml:6: profiles.peers.listeners[0]: "peer.greeter" ` + later,
		`organism.yaml:15: listeners[0].callable.requires[1]: "slw" ` + later,
	}
	got := o.UnmatchedProfileNames()
	for i := range got {
		got[i] = got[i][strings.LastIndex(got[i][:strings.Index(got[i], ": ")], "/")+1:]
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("UnmatchedProfileNames (-want +got):\n%s", diff)
	}
	mu.Lock()
	defer mu.Unlock()
	n := 0
	for _, m := range logged {
		if strings.HasPrefix(m, "profiles: ") && strings.Contains(m, later) {
			n++
		}
	}
	if n != len(want) {
		t.Errorf("the start logged %d warnings of unmatched names, want %d:\n%s", n, len(want), strings.Join(logged, "\n"))
	}
}

// warnLog is a slog.Handler keeping the messages of warnings and worse.
type warnLog struct {
	mu   *sync.Mutex
	msgs *[]string
}

func (h warnLog) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (h warnLog) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	*h.msgs = append(*h.msgs, r.Message)
	h.mu.Unlock()
	return nil
}
func (h warnLog) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h warnLog) WithGroup(string) slog.Handler      { return h }
