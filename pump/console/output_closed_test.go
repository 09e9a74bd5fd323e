package console

import (
	"context"
	"errors"
	"io"
	"strings"
	"syscall"
	"testing"
	"time"
)

// closedPipe is an output whose reader went away: every write fails.
type closedPipe struct{}

func (closedPipe) Write([]byte) (int, error) { return 0, syscall.EPIPE }

// TestOutputClosed: a session whose output can no longer be written (the
// reader of a pipe went away, | head) ends with ErrOutputClosed — at once
// while it waits for input, and at the end of its input — so its caller
// shuts the organism down and exits with an error instead of going on (or
// being killed by SIGPIPE) unread.
func TestOutputClosed(t *testing.T) {
	tests := []struct {
		name  string
		input func(t *testing.T) io.Reader
	}{
		{"input still open", func(t *testing.T) io.Reader {
			r, w := io.Pipe()
			t.Cleanup(func() { w.Close() }) // the session's reader ends too
			return r
		}},
		{"input ended", func(*testing.T) io.Reader { return strings.NewReader("@greeter Dan\n") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(helloWorld(t), Config{NoLLM: true})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			err = c.Run(ctx, tt.input(t), closedPipe{})
			if !errors.Is(err, ErrOutputClosed) || !errors.Is(err, syscall.EPIPE) {
				t.Fatalf("Run: %v, want ErrOutputClosed wrapping EPIPE", err)
			}
		})
	}
}
