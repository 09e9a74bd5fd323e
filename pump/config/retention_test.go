package config

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"
)

// TestRetentionYAML checks Retention with plain yaml.v3, outside the
// loader: both input forms, and the scalar output form.
func TestRetentionYAML(t *testing.T) {
	tests := []struct {
		in   string
		want Retention
		out  string
	}{
		{"retain_forever", Retention{Policy: RetainForever}, "retain_forever\n"},
		{"prune_on_delivery", Retention{Policy: PruneOnDelivery}, "prune_on_delivery\n"},
		{"retain_days(7)", Retention{Policy: RetainDays, Days: 7}, "retain_days(7)\n"},
		{"{retain_days: 30}", Retention{Policy: RetainDays, Days: 30}, "retain_days(30)\n"},
		{"window(36h)", Retention{Policy: Window, Window: Duration(36 * time.Hour)}, "window(36h)\n"},
		{"window( 90m )", Retention{Policy: Window, Window: Duration(90 * time.Minute)}, "window(1h30m)\n"},
		{"window(7d)", Retention{Policy: Window, Window: Duration(7 * 24 * time.Hour)}, "window(7d)\n"},
		{"{window: 2d}", Retention{Policy: Window, Window: Duration(48 * time.Hour)}, "window(2d)\n"},
		{"{window: 1h30m}", Retention{Policy: Window, Window: Duration(90 * time.Minute)}, "window(1h30m)\n"},
	}
	for _, tt := range tests {
		var got Retention
		if err := yaml.Unmarshal([]byte(tt.in), &got); err != nil {
			t.Errorf("Unmarshal(%q): %v", tt.in, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Unmarshal(%q) (-want +got):\n%s", tt.in, diff)
		}
		out, err := yaml.Marshal(got)
		if err != nil {
			t.Errorf("Marshal(%v): %v", got, err)
			continue
		}
		if string(out) != tt.out {
			t.Errorf("Marshal(%v) = %q, want %q", got, out, tt.out)
		}
	}
	for _, bad := range []string{"forever", "retain_days(-1)", "retain_days()", "retain_days(3", "{retain_days: 1, x: 2}", "[retain_forever]", "42",
		"window()", "window(0s)", "window(-1h)", "window(0d)", "window(1.5d)", "window(week)", "window(36h",
		"{window: 36}", "{window: 0s}", "{window: [1h]}", "{window: 1h, retain_days: 2}", "{keep: 1h}",
		"window(9999999999999999d)"} {
		var r Retention
		if err := yaml.Unmarshal([]byte(bad), &r); err == nil {
			t.Errorf("Unmarshal(%q) = %v, want an error", bad, r)
		}
	}
}

func TestDurationYAML(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"120", 120 * time.Second},
		{"1.5", 1500 * time.Millisecond},
		{"0", 0},
		{`"250ms"`, 250 * time.Millisecond},
		{"2h45m", 2*time.Hour + 45*time.Minute},
	}
	for _, tt := range tests {
		var d Duration
		if err := yaml.Unmarshal([]byte(tt.in), &d); err != nil {
			t.Errorf("Unmarshal(%q): %v", tt.in, err)
			continue
		}
		if d.D() != tt.want {
			t.Errorf("Unmarshal(%q) = %v, want %v", tt.in, d.D(), tt.want)
		}
	}
	out, err := yaml.Marshal(Duration(90 * time.Second))
	if err != nil || string(out) != "1m30s\n" {
		t.Errorf("Marshal(90s) = %q, %v; want \"1m30s\\n\"", out, err)
	}
	for _, bad := range []string{"soon", "[1]", "true", ".nan", "1e300"} {
		var d Duration
		if err := yaml.Unmarshal([]byte(bad), &d); err == nil {
			t.Errorf("Unmarshal(%q) = %v, want an error", bad, d)
		}
	}
}
