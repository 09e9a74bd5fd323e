package oob

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// TestIPv6LoopbackBind: oob.bind "[::1]" (and "[::1]:port") loads as the
// IPv6 loopback, and the channel serves on it; the bracketed form given in
// code works too.
func TestIPv6LoopbackBind(t *testing.T) {
	l, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	for _, bind := range []string{`"[::1]"`, `"[::1]:` + strconv.Itoa(port) + `"`, "code"} {
		t.Run(bind, func(t *testing.T) {
			var cfg config.OOB
			if bind == "code" {
				cfg = config.OOB{Enabled: true, Bind: "[::1]", Port: port}
			} else {
				src := "oob: {bind: " + bind + "}\n"
				if bind == `"[::1]"` {
					src = "oob: {bind: " + bind + ", port: " + strconv.Itoa(port) + "}\n"
				}
				o, err := config.Parse("/o/organism.yaml", []byte(src))
				if err != nil {
					t.Fatalf("oob.bind %s refused: %v", bind, err)
				}
				cfg = o.OOB
			}
			f := newFixture(t, func(o *Options) {
				o.Config.Bind, o.Config.Port, o.Config.UnixSocket = cfg.Bind, cfg.Port, ""
			})
			if err := f.srv.Start(); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, err := Dial(ctx, "[::1]:"+strconv.Itoa(port), f.owner)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.clock = f.clock
			if r, raw, err := c.Do(ctx, []byte(`<get-status/>`)); err != nil || code(r) != "" {
				t.Fatalf("get-status over [::1]: %v %s", err, raw)
			}
			if err := f.srv.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}
