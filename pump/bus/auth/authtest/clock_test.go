package authtest

import (
	"testing"
	"time"
)

func TestClock(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 10, 0, time.UTC)
	c := NewClock(t0)
	tests := []struct {
		advance time.Duration
		want    time.Time
	}{
		{0, t0},
		{30 * time.Second, t0.Add(30 * time.Second)},
		{time.Hour, t0.Add(time.Hour + 30*time.Second)},
	}
	for _, tt := range tests {
		c.Advance(tt.advance)
		if got := c.Now(); !got.Equal(tt.want) {
			t.Errorf("after Advance(%v): Now() = %v, want %v", tt.advance, got, tt.want)
		}
	}
}
