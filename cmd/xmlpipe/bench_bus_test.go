package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// TestBenchBusVersusPump runs `xmlpipe bench --bus --versus-pump` briefly:
// the pump bench first, then the bus, and the ratio of the bus's replies/s
// to the pump's conversations/s; --versus-pump without --bus is refused.
func TestBenchBusVersusPump(t *testing.T) {
	dir := t.TempDir()
	r := runBinary(t, dir, "", "bench", "--bus", "--versus-pump", "--clients", "4", "--duration", "500ms", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	var got struct {
		RepliesPerSec float64        `json:"replies_per_sec"`
		Lost          int64          `json:"lost"`
		Versus        *busVersusPump `json:"versus_pump"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	switch v := got.Versus; {
	case v == nil:
		t.Fatalf("no versus_pump in %s", r.stdout)
	case v.PumpEnvelopesPerSec <= 0 || v.PumpConversationsPerSec != v.PumpEnvelopesPerSec/hopsPerConversation:
		t.Errorf("pump %f envelopes/s, %f conversations/s", v.PumpEnvelopesPerSec, v.PumpConversationsPerSec)
	case got.RepliesPerSec <= 0 || got.Lost != 0:
		t.Errorf("bus %f replies/s, %d lost", got.RepliesPerSec, got.Lost)
	case math.Abs(v.Ratio-got.RepliesPerSec/v.PumpConversationsPerSec) > 1e-9*v.Ratio:
		t.Errorf("ratio %f of %f replies/s over %f conversations/s", v.Ratio, got.RepliesPerSec, v.PumpConversationsPerSec)
	}
	if r := runBinary(t, dir, "", "bench", "--versus-pump"); r.code != exitUsage {
		t.Errorf("bench --versus-pump without --bus: exit %d, want %d", r.code, exitUsage)
	}
}

// TestBenchBusCPUProfile runs `xmlpipe bench --bus --cpuprofile F`
// briefly: the profile, started once every client is connected, is
// written and stopped by the time the command exits.
func TestBenchBusCPUProfile(t *testing.T) {
	dir := t.TempDir()
	prof := filepath.Join(dir, "cpu.prof")
	r := runBinary(t, dir, "", "bench", "--bus", "--in-memory", "--clients", "4", "--duration", "500ms", "--cpuprofile", prof)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	st, err := os.Stat(prof)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() == 0 {
		t.Errorf("%s is empty", prof)
	}
}
