package federation

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// Link timing.
const (
	pingEvery    = 10 * time.Second
	silenceLimit = 3 * pingEvery
	writeTimeout = 10 * time.Second
	// maxFrame caps one incoming frame.
	maxFrame = 8 << 20
	// handlersPerLink bounds the envelopes of one link handled at once.
	handlersPerLink = 256
)

// conn is one live, authenticated link of a gateway.
type conn struct {
	g    *gateway
	ws   *websocket.Conn
	peer peer
	wmu  sync.Mutex
	once sync.Once
	done chan struct{}
	err  error
	// ready is closed once this side has asked the peer for the imports
	// it lacks (the first attempt): the peer's calls wait for it, so a
	// peer that calls back at once finds its exports already imported.
	ready     chan struct{}
	readyOnce sync.Once
}

// markReady lets the peer's calls through (once).
func (c *conn) markReady() { c.readyOnce.Do(func() { close(c.ready) }) }

// write sends one binary frame (an envelope).
func (c *conn) write(b []byte) error { return c.writeMessage(websocket.BinaryMessage, b) }

// writeFrame sends one JSON text frame.
func (c *conn) writeFrame(f frame) error { return c.writeMessage(websocket.TextMessage, f.marshal()) }

func (c *conn) writeMessage(mt int, b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	select {
	case <-c.done:
		return errLinkClosed
	default:
	}
	_ = c.ws.SetWriteDeadline(time.Now().Add(writeTimeout))
	return c.ws.WriteMessage(mt, b)
}

// close ends the link (once) with cause.
func (c *conn) close(cause error) {
	c.once.Do(func() {
		c.err = cause
		close(c.done)
		_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""),
			time.Now().Add(time.Second))
		_ = c.ws.Close()
	})
}

var errLinkClosed = errors.New("federation: link closed")

// run serves the link until it ends: it reads frames, keeps the link alive
// with pings, and hands each envelope to the gateway.
func (c *conn) run() error {
	c.ws.SetReadLimit(maxFrame)
	_ = c.ws.SetReadDeadline(time.Now().Add(silenceLimit))
	c.ws.SetPongHandler(func(string) error {
		return c.ws.SetReadDeadline(time.Now().Add(silenceLimit))
	})
	go func() {
		t := time.NewTicker(pingEvery)
		defer t.Stop()
		for {
			select {
			case <-c.done:
				return
			case <-t.C:
				if err := c.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(writeTimeout)); err != nil {
					c.close(fmt.Errorf("ping: %w", err))
					return
				}
			}
		}
	}()
	sem := make(chan struct{}, handlersPerLink)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		mt, b, err := c.ws.ReadMessage()
		if err != nil {
			c.close(err)
			return c.err
		}
		_ = c.ws.SetReadDeadline(time.Now().Add(silenceLimit))
		switch mt {
		case websocket.TextMessage:
			var f frame
			if err := json.Unmarshal(b, &f); err != nil {
				c.g.log.Warn("federation: refused a frame that is not JSON", "error", err)
				continue
			}
			c.g.onFrame(f)
		case websocket.BinaryMessage:
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer func() { <-sem; wg.Done() }()
				c.g.onEnvelope(c, b)
			}()
		}
	}
}
