package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
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
)

// Retention is a journal retention policy. In YAML it is written as the
// scalar retain_forever, prune_on_delivery or retain_days(N), or as the
// mapping {retain_days: N}.
type Retention struct {
	// Policy is the policy; "" is the zero value, meaning "not set".
	Policy RetentionPolicy
	// Days is N of retain_days(N); 0 for the other policies.
	Days int
}

// errRetentionSyntax describes the accepted forms.
var errRetentionSyntax = errors.New("want retain_forever, prune_on_delivery, retain_days(N) or {retain_days: N}")

// IsZero reports whether no policy is set.
func (r Retention) IsZero() bool { return r.Policy == "" }

// String formats r in its scalar YAML form, e.g. "retain_days(7)".
func (r Retention) String() string {
	if r.Policy == RetainDays {
		return fmt.Sprintf("retain_days(%d)", r.Days)
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
		if len(n.Content) != 2 || n.Content[0].Value != string(RetainDays) {
			return fmt.Errorf("%w, got %s", errRetentionSyntax, describe(n))
		}
		v := n.Content[1]
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

func (r *Retention) setDays(days int) error {
	if days <= 0 {
		return fmt.Errorf("retain_days: want a positive number of days, got %d", days)
	}
	*r = Retention{Policy: RetainDays, Days: days}
	return nil
}
