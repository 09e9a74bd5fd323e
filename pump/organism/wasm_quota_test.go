package organism

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// TestWasmDiskQuotaThroughThePump: capabilities.max_disk_bytes reaches the
// sandbox. A guest writing past it is told so (its own answer says it
// failed), one that fails after it is a <huh> whose diagnostics name the
// quota, nothing
// past the quota lands on disk, and the organism goes on answering.
func TestWasmDiskQuotaThroughThePump(t *testing.T) {
	ops := guestPath(t, "ops")
	dir := t.TempDir()
	data := filepath.Join(dir, "wasm-data")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	yaml := fmt.Sprintf(`organism: {name: wasm-quota}
listeners:
  - name: ops
    type: wasm
    module: %s
    description: Performs one file operation
    payload:
      root: Ops
      fields: [{name: Do}, {name: Path}, {name: Arg}]
    response:
      root: Done
      fields: [{name: OK, type: boolean}, {name: Result, optional: true}, {name: Error, optional: true}]
    capabilities: {dir: wasm-data, dir_writable: true, max_disk_bytes: 16384, timeout: 1m}
`, ops)
	path := filepath.Join(dir, "organism.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	o, err := Load(path, Options{WasmCache: wasmCache})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	defer o.Shutdown(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	answer := func(do, path, arg string) pump.Event {
		t.Helper()
		c := make(collector, 64)
		body := `<Ops xmlns=""><Do>` + do + `</Do><Path>` + path + `</Path><Arg>` + arg + `</Arg></Ops>`
		env := stage.AppendEnvelope(nil, "tester", "ops", stage.NewThreadID(), []byte(body))
		if _, err := o.Pump.InjectWait(ctx, env, c); err != nil {
			t.Fatalf("inject %s: %v", do, err)
		}
		return c.await(t, pump.EventReply, pump.EventHuh, pump.EventDeadLetter)
	}
	big := strings.Repeat("x", 20000) // five blocks, and a block for its name
	if e := answer("write", "/data/big", big); e.Kind != pump.EventReply ||
		!strings.Contains(string(e.Envelope), "<OK>false</OK>") || !strings.Contains(string(e.Envelope), "I/O error") {
		t.Fatalf("a write past the quota: %s %s", e.Kind, e.Envelope)
	}
	// The sender gets the canned <huh>; the operator's diagnostics name the quota.
	if e := answer("mustwrite", "/data/other", big); e.Kind != pump.EventHuh ||
		!strings.Contains(strings.Join(e.Diagnostics, "\n"), "disk quota (max_disk_bytes 16384") {
		t.Fatalf("a guest failing past the quota: %s %q %q %q", e.Kind, e.Error, e.Diagnostics, e.Envelope)
	}
	var total int64
	for _, name := range []string{"big", "other"} {
		if fi, err := os.Stat(filepath.Join(data, name)); err == nil {
			total += fi.Size()
		}
	}
	if total > 16384 {
		t.Fatalf("%d bytes on disk past a 16384-byte quota", total)
	}
	if e := answer("ping", "", ""); e.Kind != pump.EventReply || !strings.Contains(string(e.Envelope), "<Result>pong</Result>") {
		t.Fatalf("after the quota: %s %s", e.Kind, e.Envelope)
	}
}

// TestWasmDiskQuotaRecountedAtReload: a reload recounts a writable dir's
// disk quota, a listener the reload leaves unchanged included, so that
// files the operator added by hand since it was counted are counted: a
// write they leave no room for is refused.
func TestWasmDiskQuotaRecountedAtReload(t *testing.T) {
	ops := guestPath(t, "ops")
	dir := t.TempDir()
	data := filepath.Join(dir, "wasm-data")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	yaml := fmt.Sprintf(`organism: {name: wasm-quota}
listeners:
  - name: ops
    type: wasm
    module: %s
    description: Performs one file operation
    payload:
      root: Ops
      fields: [{name: Do}, {name: Path}, {name: Arg}]
    response:
      root: Done
      fields: [{name: OK, type: boolean}, {name: Result, optional: true}, {name: Error, optional: true}]
    capabilities: {dir: wasm-data, dir_writable: true, max_disk_bytes: 16384, timeout: 1m}
`, ops)
	cfg := parseIn(t, dir, yaml)
	o, err := Load(filepath.Join(dir, "organism.yaml"), Options{WasmCache: wasmCache})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	defer o.Shutdown(context.Background())
	if err := os.WriteFile(filepath.Join(data, "by-hand"), []byte(strings.Repeat("x", 4097)), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := o.Reload(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r.Unchanged != 1 {
		t.Fatalf("reload report %+v, want the listener unchanged", r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := make(collector, 64)
	body := `<Ops xmlns=""><Do>write</Do><Path>/data/a</Path><Arg>` + strings.Repeat("x", 1000) + `</Arg></Ops>`
	env := stage.AppendEnvelope(nil, "tester", "ops", stage.NewThreadID(), []byte(body))
	if _, err := o.Pump.InjectWait(ctx, env, c); err != nil {
		t.Fatal(err)
	}
	if e := c.await(t, pump.EventReply, pump.EventHuh, pump.EventDeadLetter); e.Kind != pump.EventReply ||
		!strings.Contains(string(e.Envelope), "<OK>false</OK>") {
		t.Fatalf("a write past what the hand-made file leaves: %s %s", e.Kind, e.Envelope)
	}
	fi, err := os.Stat(filepath.Join(data, "a"))
	if err != nil {
		t.Fatal(err)
	}
	// by-hand counts two blocks and its name one, a's name the fourth:
	// no room is left for its content.
	if want := int64(0); fi.Size() != want {
		t.Errorf("the guest wrote %d bytes, want %d (what the quota leaves)", fi.Size(), want)
	}
}
