package oob

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestNoGoroutineLeak: an organism with the OOB channel serving requests on
// both sockets (a subscription, an injected message, status and listing)
// leaves none of its goroutines behind once the channel and the organism
// are shut down.
func TestNoGoroutineLeak(t *testing.T) {
	before := goroutines()
	port := freePort(t)
	f := newFixture(t, func(o *Options) { o.Config.Port = port })
	if err := f.srv.Start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	endpoints := []string{"unix:" + f.srv.opts.Config.UnixSocket}
	for _, a := range f.srv.Addrs() {
		if a.Network() == "tcp" {
			endpoints = append(endpoints, a.String())
		}
	}
	if len(endpoints) != 2 {
		t.Fatalf("endpoints %v, want the Unix socket and the WebSocket", endpoints)
	}
	for _, ep := range endpoints {
		c, err := Dial(ctx, ep, f.owner)
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range []string{
			`<subscribe-thread><include-payloads>true</include-payloads></subscribe-thread>`,
			`<get-status><include-metrics>true</include-metrics></get-status>`,
			`<list-listeners><detailed>true</detailed></list-listeners>`,
			`<inject-message><to>greeter</to><payload><Greeting xmlns=""><Name>Ada</Name></Greeting></payload></inject-message>`,
		} {
			r, raw, err := c.Do(ctx, []byte(op))
			if err != nil || r.Err() != nil {
				t.Fatalf("%s: %v %v\n%s", op, err, r.Err(), raw)
			}
		}
		if _, _, err := c.Next(ctx); err != nil { // a push of the injected conversation
			t.Fatal(err)
		}
		if ep == endpoints[0] {
			c.Close() // the other connection stays open: shutdown must close it
		}
	}
	if err := f.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := f.org.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	// Both shutdowns have returned: what they stopped is at most finishing
	// its last instructions.
	deadline := time.Now().Add(5 * time.Second)
	for {
		leaked := newSince(before, goroutines())
		if len(leaked) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines left behind:\n\n%s", len(leaked), strings.Join(leaked, "\n\n"))
		}
		runtime.Gosched()
		time.Sleep(5 * time.Millisecond)
	}
}

// goroutines returns the stack of every goroutine by its header line
// ("goroutine N [state]:" without the state).
func goroutines() map[string]string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	out := map[string]string{}
	for _, g := range strings.Split(string(buf), "\n\n") {
		head, _, _ := strings.Cut(g, " [")
		out[head] = g
	}
	return out
}

// newSince returns the stacks of goroutines in after but not before that
// run this module's code or the network servers it starts (the test's own
// goroutine excepted).
func newSince(before, after map[string]string) []string {
	var out []string
	for id, g := range after {
		if _, ok := before[id]; ok || strings.Contains(g, "TestNoGoroutineLeak") {
			continue
		}
		if strings.Contains(g, "github.com/xml-pipeline/xmlpipe/") || strings.Contains(g, "gorilla/websocket") ||
			strings.Contains(g, "net/http.") {
			out = append(out, g)
		}
	}
	return out
}
