package bench

import (
	"context"
	"testing"
	"time"
)

// TestRunMeasuresSomething runs a short bench and checks the result is sane
// (numbers themselves are reported by `xmlpipe bench`, not asserted).
func TestRunMeasuresSomething(t *testing.T) {
	r, err := Run(context.Background(), Config{Duration: 300 * time.Millisecond, Injectors: 2})
	if err != nil {
		t.Fatal(err)
	}
	if r.Envelopes < 2 || r.EnvelopesPerSec <= 0 || r.P99us <= 0 || r.FloorUs <= 0 || r.FloorRatio <= 0 || r.Floor1CoreUs <= 0 {
		t.Fatalf("implausible result: %+v", r)
	}
	t.Log("\n" + r.String())
}
