package federation

import (
	"context"
	"crypto/sha256"
	"fmt"
	"time"

	"github.com/xml-pipeline/xmlpipe/xmlpipe"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// call is a call this side made and waits on.
type call struct {
	thread  string // the caller's thread
	answer  chan *envelope
	refused chan error
	// cancelled is closed when the caller's thread ends first.
	cancelled chan struct{}
}

// proxy is the handler of an imported capability: it sends the payload to
// the peer's capability name on a fresh link thread and waits (bounded by
// call_timeout, outages included) for the answer, which it returns to the
// caller. A caller that takes text (an LLM agent) gets the answer's XML as
// text. The call is recorded with its envelope, so the same message handled
// again after a crash adopts it rather than calling twice.
func (g *gateway) proxy(remote string, pt *xmlpipe.PayloadType) xmlpipe.Handler {
	return xmlpipe.HandlerFunc(func(ctx context.Context, payload any, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		body, err := pt.AppendPayload(nil, payload)
		if err != nil {
			return nil, fmt.Errorf("federation: gateway %s: %w", g.name, err)
		}
		c := &call{thread: md.ThreadID, answer: make(chan *envelope, 1), refused: make(chan error, 1),
			cancelled: make(chan struct{})}
		lt, early, err := g.open(c, md.ThreadID, remote, body, traceparent(ctx))
		if err != nil {
			return nil, err
		}
		keep := false // a call left open at shutdown is adopted after the restart
		defer func() {
			g.mu.Lock()
			delete(g.pending, lt)
			if g.byThread[md.ThreadID] == lt {
				delete(g.byThread, md.ThreadID)
			}
			g.mu.Unlock()
			if keep {
				return
			}
			// The call stays claimed until its record is gone, so that the
			// same call made again meanwhile is a new one, not an adoption.
			g.m.db.callDone(lt, func(err error) {
				if err != nil {
					g.log.Warn("federation: call record", "error", err)
				}
				g.mu.Lock()
				delete(g.claimed, lt)
				g.mu.Unlock()
			})
		}()
		start := time.Now()
		if early != nil {
			return g.answer(md, early)
		}
		t := time.NewTimer(g.callTimeout)
		defer t.Stop()
		select {
		case a := <-c.answer:
			g.m.observe(g.name, time.Since(start))
			return g.answer(md, a)
		case err := <-c.refused:
			return nil, err
		case <-c.cancelled:
			return nil, nil
		case <-t.C:
			g.cancel(lt)
			return nil, fmt.Errorf("%w: gateway %s: %s after %s", ErrTimeout, g.name, remote, g.callTimeout)
		case <-ctx.Done():
			g.cancel(lt)
			return nil, ctx.Err()
		case <-g.m.closed:
			keep = true
			return nil, ErrClosed
		}
	})
}

// answer turns the peer's answer into the handler's response.
func (g *gateway) answer(md xmlpipe.Metadata, a *envelope) (xmlpipe.Response, error) {
	switch a.Link.Kind {
	case KindEnd:
		return nil, nil
	case KindHuh:
		return nil, fmt.Errorf("%w: gateway %s: the peer answered: %s", ErrRefused, g.name, a.Link.Error)
	}
	if l, ok := g.m.opts.Pump.Lookup(md.From); ok && l.Agent && l.Payload != nil {
		if v, ok := stage.NewTextPayload(l.Payload.GoType(), string(a.Payload)); ok {
			return xmlpipe.Respond(v), nil
		}
	}
	v, err := replyValue(a.Payload)
	if err != nil {
		return nil, fmt.Errorf("federation: gateway %s: the peer's answer <%s>: %w", g.name, a.PayloadName, err)
	}
	return xmlpipe.Respond(v), nil
}

// cancel tells the peer the caller no longer waits for call lt.
func (g *gateway) cancel(lt string) {
	if err := g.send(&envelope{Thread: lt, Link: link{Kind: KindCancel, Ref: lt}}, nil); err != nil {
		g.log.Warn("federation: cancel not sent", "call", lt, "error", err)
	}
}

// threadsEnded cancels the open calls of callers whose thread ended.
func (g *gateway) threadsEnded(ids []string) {
	var ended []*call
	var lts []string
	g.mu.Lock()
	for _, id := range ids {
		lt, ok := g.byThread[id]
		if !ok {
			continue
		}
		delete(g.byThread, id)
		if c := g.pending[lt]; c != nil {
			delete(g.pending, lt)
			ended = append(ended, c)
			lts = append(lts, lt)
		}
	}
	g.mu.Unlock()
	for i, c := range ended {
		close(c.cancelled)
		g.cancel(lts[i])
	}
}

// open starts the call of payload body from callerThread — or, when a call
// of the same payload from the same thread was recorded and nobody waits
// on it (the message is re-delivered after a restart), adopts that call
// instead of calling again, returning its answer if it came meanwhile.
func (g *gateway) open(c *call, callerThread, remote string, body []byte, tp string) (lt string, early *envelope, err error) {
	h := sha256.New()
	h.Write([]byte(callerThread))
	h.Write([]byte{0})
	h.Write([]byte(remote))
	h.Write([]byte{0})
	h.Write(body)
	digest := h.Sum(nil)
	var ids []string
	var answers [][]byte
	if g.adoptable { // calls recorded before this start may wait for adoption
		var err error
		if ids, answers, err = g.m.db.openCalls(g.name, callerThread, digest); err != nil {
			return "", nil, err
		}
	}
	g.mu.Lock()
	for i, id := range ids {
		if g.pending[id] != nil || g.claimed[id] {
			continue
		}
		g.claimed[id] = true
		g.pending[id] = c
		g.byThread[callerThread] = id
		g.mu.Unlock()
		g.log.Info("federation: a re-delivered message adopts its call from before the restart", "call", id)
		if answers[i] != nil {
			g.mu.Lock()
			delete(g.pending, id)
			g.mu.Unlock()
			a, err := parse(answers[i])
			return id, a, err
		}
		return id, nil, nil
	}
	lt = stage.NewThreadID()
	g.pending[lt] = c
	g.claimed[lt] = true
	g.byThread[callerThread] = lt
	g.mu.Unlock()
	e := &envelope{To: remote, Thread: lt, Link: link{ID: lt, Kind: KindCall, Traceparent: tp}, Payload: body}
	if err := g.send(e, &callRecord{callerThread: callerThread, digest: digest}); err != nil {
		g.mu.Lock()
		delete(g.pending, lt)
		delete(g.claimed, lt)
		g.mu.Unlock()
		return "", nil, err
	}
	return lt, nil, nil
}
