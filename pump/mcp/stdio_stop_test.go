package mcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for a logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestServeStdioStopIsNoError: a stdio session stopped by its context —
// `xmlpipe mcp` at Ctrl-C or SIGTERM — ends without an error record in the
// log. (The SDK's Server.Run logged `level=ERROR msg="server run
// cancelled" error="context canceled"` for it.)
func TestServeStdioStopIsNoError(t *testing.T) {
	o := startOrganism(t)
	defer o.Shutdown(context.Background())
	var logs syncBuffer
	b := New(o.Pump, Options{Timeout: time.Minute,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	defer b.Close()
	inR, inW := io.Pipe()
	defer inW.Close()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() {
		served <- b.ServeStdio(ctx, inR, outW, StdioOptions{})
		outW.Close()
	}()
	go func() { _, _ = io.Copy(io.Discard, outR) }()
	if _, err := fmt.Fprintln(inW, fmt.Sprintf(initLine, "2025-06-18")); err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case err := <-served:
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("ServeStdio = %v, want nil or context.Canceled", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("ServeStdio did not return after its context ended")
	}
	for line := range strings.Lines(logs.String()) {
		if strings.Contains(line, "level=ERROR") {
			t.Errorf("a stop logged an error: %s", line)
		}
	}
}
