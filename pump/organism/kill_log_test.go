package organism

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// signalHandler is a slog handler that keeps the records' text and tells
// seen of every record whose message contains want.
type signalHandler struct {
	slog.Handler
	want string
	seen chan string
}

func (h signalHandler) Handle(ctx context.Context, r slog.Record) error {
	if strings.Contains(r.Message, h.want) {
		select {
		case h.seen <- r.Message:
		default:
		}
	}
	return h.Handler.Handle(ctx, r)
}

func (h signalHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return signalHandler{Handler: h.Handler.WithAttrs(as), want: h.want, seen: h.seen}
}

func (h signalHandler) WithGroup(name string) slog.Handler {
	return signalHandler{Handler: h.Handler.WithGroup(name), want: h.want, seen: h.seen}
}

// TestKillLogsTheKillNotAHalt: an agent whose conversation is killed while
// its model request runs logs that the conversation was killed; it never
// says "agent halted", which reads as the agent's fault or an operator's
// halt.
func TestKillLogsTheKillNotAHalt(t *testing.T) {
	var logs lockedBuffer
	h := signalHandler{Handler: slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}),
		want: "conversation killed: the agent's turn ended", seen: make(chan string, 1)}
	m := newHangingModel(t)
	o := agentOrganismWith(t, &scriptedModel{Server: m.Server}, haltOrganism, Options{Logger: slog.New(h)})
	c := startConversation(t, o, "thinker", "think hard")
	select {
	case <-m.started:
	case <-time.After(30 * time.Second):
		t.Fatal("the model request never started")
	}
	if _, err := o.Pump.Kill(c.id); err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.seen:
	case <-time.After(30 * time.Second):
		t.Fatalf("no log line says the conversation was killed:\n%s", logs.String())
	}
	if out := logs.String(); strings.Contains(out, "agent halted") {
		t.Errorf("a kill logged as a halt:\n%s", out)
	}
}
