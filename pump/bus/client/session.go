package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump/bus/wire"
)

// ErrDisconnected: the bus closed the connection.
var ErrDisconnected = errors.New("disconnected from the bus")

// ErrorFrame is a request the bus answered with an error frame.
type ErrorFrame struct {
	Frame wire.Error
}

// Error is the frame's error text.
func (e *ErrorFrame) Error() string { return e.Frame.Error }

// Session matches requests to their replies on one socket: every request
// carries an id the bus echoes, so replies are matched however the
// organism's events interleave; frames without an id (events) go to the
// event function.
type Session struct {
	c     *Conn
	event func(typ string, data []byte)

	mu      sync.Mutex
	pending map[string]chan json.RawMessage
	next    atomic.Int64
	done    chan struct{}
	err     error // why the connection ended (after done is closed)
	closed  atomic.Bool
}

// NewSession starts reading c: replies go to their Request, event frames to
// event (called from the reading goroutine, in order; it must not block
// for long). The session owns c from now on.
func NewSession(c *Conn, event func(typ string, data []byte)) *Session {
	s := &Session{c: c, event: event, pending: map[string]chan json.RawMessage{}, done: make(chan struct{})}
	go s.readLoop()
	return s
}

// Conn is the session's socket (its Username and Role).
func (s *Session) Conn() *Conn { return s.c }

// readLoop dispatches frames: replies to their waiting request, events to
// the event function.
func (s *Session) readLoop() {
	var err error
	defer func() {
		if !s.closed.Load() {
			s.err = fmt.Errorf("%w: %v", ErrDisconnected, err)
		}
		s.mu.Lock()
		for id, ch := range s.pending {
			close(ch)
			delete(s.pending, id)
		}
		s.mu.Unlock()
		close(s.done)
	}()
	for {
		var data []byte
		if data, err = s.c.ReadMessage(); err != nil {
			return
		}
		var head wire.Head
		if json.Unmarshal(data, &head) != nil {
			continue
		}
		if len(head.ID) > 0 {
			s.mu.Lock()
			ch := s.pending[string(head.ID)]
			delete(s.pending, string(head.ID))
			s.mu.Unlock()
			if ch != nil {
				ch <- data
			}
			continue
		}
		s.event(head.Type, data)
	}
}

// Request sends req with a fresh id and decodes its reply into out. An
// error frame is an *ErrorFrame; a connection that ends first wraps
// ErrDisconnected.
func (s *Session) Request(ctx context.Context, req wire.Request, out any) error {
	id := strconv.Quote("c" + strconv.FormatInt(s.next.Add(1), 10))
	req.ID = json.RawMessage(id)
	ch := make(chan json.RawMessage, 1)
	s.mu.Lock()
	select {
	case <-s.done:
		s.mu.Unlock()
		return s.connErr()
	default:
	}
	s.pending[id] = ch
	s.mu.Unlock()
	if err := s.c.WriteJSON(req); err != nil {
		s.forget(id)
		return fmt.Errorf("client: %s: %w", req.Type, err)
	}
	var data json.RawMessage
	select {
	case d, ok := <-ch:
		if !ok {
			return s.connErr()
		}
		data = d
	case <-ctx.Done():
		s.forget(id)
		return ctx.Err()
	}
	var head wire.Head
	if err := json.Unmarshal(data, &head); err != nil {
		return fmt.Errorf("client: %s: bad reply: %w", req.Type, err)
	}
	if head.Type == wire.TypeError {
		var e ErrorFrame
		if err := json.Unmarshal(data, &e.Frame); err != nil {
			return fmt.Errorf("client: %s: bad reply: %w", req.Type, err)
		}
		return &e
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("client: %s: bad reply: %w", req.Type, err)
	}
	return nil
}

func (s *Session) forget(id string) {
	s.mu.Lock()
	delete(s.pending, id)
	s.mu.Unlock()
}

// connErr is the error of a request on a closed connection.
func (s *Session) connErr() error {
	if err := s.Err(); err != nil {
		return err
	}
	return ErrDisconnected
}

// Done is closed when the connection ends; Err says why.
func (s *Session) Done() <-chan struct{} { return s.done }

// Err is why the connection ended (nil before, or after Close).
func (s *Session) Err() error {
	select {
	case <-s.done:
		return s.err
	default:
		return nil
	}
}

// Close sends a normal closure, waits (at most wait) for the bus to close
// the socket, closes it and waits for the reader to stop. Closing again
// only waits.
func (s *Session) Close(wait time.Duration) {
	if s.closed.Swap(true) {
		<-s.done
		return
	}
	_ = s.c.CloseFrame()
	select {
	case <-s.done:
	case <-time.After(wait):
	}
	s.c.Close()
	<-s.done
}
