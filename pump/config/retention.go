package config

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// RetentionPolicy names a journal retention policy.
type RetentionPolicy string

// The journal retention policies.
const (
	// RetainForever never deletes entries (the default).
	RetainForever RetentionPolicy = "retain_forever"
	// PruneOnDelivery deletes an entry once its delivery is recorded.
	PruneOnDelivery RetentionPolicy = "prune_on_delivery"
	// RetainDays deletes entries older than Retention.Days days.
	RetainDays RetentionPolicy = "retain_days"
	// Window deletes entries older than Retention.Window.
	Window RetentionPolicy = "window"
)

// Retention is a journal retention policy. In YAML it is written as the
// scalar retain_forever, prune_on_delivery, retain_days(N) or window(D),
// or as the mapping {retain_days: N} or {window: D}. D is a positive Go
// duration ("36h", "90m") or a whole number of days ("7d").
type Retention struct {
	// Policy is the policy; "" is the zero value, meaning "not set".
	Policy RetentionPolicy
	// Days is N of retain_days(N); 0 for the other policies.
	Days int
	// Window is D of window(D); 0 for the other policies.
	Window Duration
}

// errRetentionSyntax describes the accepted forms.
var errRetentionSyntax = errors.New("want retain_forever, prune_on_delivery, retain_days(N), window(D), " +
	"{retain_days: N} or {window: D}")

// IsZero reports whether no policy is set.
func (r Retention) IsZero() bool { return r.Policy == "" }

// String formats r in its scalar YAML form, e.g. "retain_days(7)" or
// "window(36h0m0s)".
func (r Retention) String() string {
	switch r.Policy {
	case RetainDays:
		return fmt.Sprintf("retain_days(%d)", r.Days)
	case Window:
		return "window(" + FormatWindow(r.Window.D()) + ")"
	}
	return string(r.Policy)
}

// MarshalYAML writes r in its scalar form.
func (r Retention) MarshalYAML() (any, error) { return r.String(), nil }

// UnmarshalYAML reads any of the accepted forms. N must be a positive
// integer.
func (r *Retention) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		if n.ShortTag() != "!!str" {
			return fmt.Errorf("%w, got %s", errRetentionSyntax, describe(n))
		}
		v := strings.TrimSpace(n.Value)
		switch RetentionPolicy(v) {
		case RetainForever, PruneOnDelivery:
			*r = Retention{Policy: RetentionPolicy(v)}
			return nil
		}
		if arg, ok := strings.CutPrefix(v, string(Window)+"("); ok {
			arg, ok = strings.CutSuffix(arg, ")")
			if !ok {
				return fmt.Errorf("%w, got %s", errRetentionSyntax, describe(n))
			}
			return r.setWindow(strings.TrimSpace(arg))
		}
		arg, ok := strings.CutPrefix(v, string(RetainDays)+"(")
		if !ok {
			return fmt.Errorf("%w, got %s", errRetentionSyntax, describe(n))
		}
		arg, ok = strings.CutSuffix(arg, ")")
		if !ok {
			return fmt.Errorf("%w, got %s", errRetentionSyntax, describe(n))
		}
		days, err := strconv.Atoi(strings.TrimSpace(arg))
		if err != nil {
			return fmt.Errorf("%w, got %s", errRetentionSyntax, describe(n))
		}
		return r.setDays(days)
	case yaml.MappingNode:
		if len(n.Content) != 2 {
			return fmt.Errorf("%w, got a mapping of %d keys", errRetentionSyntax, len(n.Content)/2)
		}
		if k := n.Content[0].Value; k != string(RetainDays) && k != string(Window) {
			return fmt.Errorf("unknown key %q: %w", k, errRetentionSyntax)
		}
		v := n.Content[1]
		if n.Content[0].Value == string(Window) {
			if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!str" {
				return fmt.Errorf("window: want a positive duration (\"36h\", \"7d\"), got %s", describe(v))
			}
			return r.setWindow(strings.TrimSpace(v.Value))
		}
		if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!int" {
			return fmt.Errorf("retain_days: want a positive integer, got %s", describe(v))
		}
		days, err := strconv.Atoi(v.Value)
		if err != nil {
			return fmt.Errorf("retain_days: want a positive integer, got %s", describe(v))
		}
		return r.setDays(days)
	}
	return fmt.Errorf("%w, got %s", errRetentionSyntax, describe(n))
}

// setWindow sets window(arg): a Go duration or a whole number of days
// ("7d"), positive.
func (r *Retention) setWindow(arg string) error {
	d, err := ParseWindow(arg)
	if err != nil {
		return err
	}
	*r = Retention{Policy: Window, Window: Duration(d)}
	return nil
}

// ParseWindow parses the duration of a window retention: a Go duration
// ("36h", "90m") or a whole number of days ("7d"). It must be positive.
func ParseWindow(arg string) (time.Duration, error) {
	var d time.Duration
	if days, ok := strings.CutSuffix(arg, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n > math.MaxInt64/int(24*time.Hour) {
			return 0, fmt.Errorf("window: want a positive duration (\"36h\", \"7d\"), got %q", arg)
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(arg); err != nil {
			return 0, fmt.Errorf("window: want a positive duration (\"36h\", \"7d\"), got %q", arg)
		}
	}
	if d <= 0 {
		return 0, fmt.Errorf("window: want a positive duration, got %q", arg)
	}
	return d, nil
}

func (r *Retention) setDays(days int) error {
	if days <= 0 {
		return fmt.Errorf("retain_days: want a positive number of days, got %d", days)
	}
	*r = Retention{Policy: RetainDays, Days: days}
	return nil
}

// FormatWindow writes a window's duration as ParseWindow reads it: whole
// days as "7d", else the Go duration without zero minutes or seconds
// ("36h", "1h30m"). It is the store's spelling (store.FormatWindow).
func FormatWindow(d time.Duration) string { return store.FormatWindow(d) }
