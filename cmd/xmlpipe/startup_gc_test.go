package main

import (
	"os"
	"runtime/debug"
	"testing"
)

// TestStartupGC: without GOGC in the environment the collector's target is
// startupGCPercent until restore, then what it was (restore may run twice);
// with GOGC set it is never touched.
func TestStartupGC(t *testing.T) {
	tests := []struct {
		name   string
		gogc   string // "" = unset
		during int
	}{
		{"GOGC unset", "", startupGCPercent},
		{"GOGC set", "150", 150},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("GOGC", tt.gogc)
			if tt.gogc == "" {
				os.Unsetenv("GOGC") // t.Setenv puts the original back
			}
			before := debug.SetGCPercent(150)
			defer debug.SetGCPercent(before)
			restore := startupGC()
			if got := debug.SetGCPercent(-1); got != tt.during {
				t.Errorf("GC percent while starting = %d, want %d", got, tt.during)
			}
			debug.SetGCPercent(tt.during)
			restore()
			restore()
			if got := debug.SetGCPercent(150); got != 150 {
				t.Errorf("GC percent after restore = %d, want 150", got)
			}
		})
	}
}
