package config

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"
)

// Duration is a time.Duration written in YAML either as a number of seconds
// (1.0, 120) — the reference's form — or as a Go duration string ("1h",
// "90s", "1.5s").
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String formats d as a Go duration string.
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalYAML writes d as a Go duration string.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// UnmarshalYAML reads a number of seconds or a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("want a duration (seconds or a string like \"30s\"), got %s", DescribeNode(n))
	}
	switch n.ShortTag() {
	case "!!int", "!!float":
		secs, err := strconv.ParseFloat(n.Value, 64)
		if err != nil {
			if i, ierr := strconv.ParseInt(n.Value, 0, 64); ierr == nil {
				secs, err = float64(i), nil
			}
		}
		if err != nil || math.IsNaN(secs) || math.Abs(secs) > math.MaxInt64/float64(time.Second) {
			return fmt.Errorf("want a duration (seconds or a string like \"30s\"), got %s", DescribeNode(n))
		}
		*d = Duration(secs * float64(time.Second))
		return nil
	case "!!str":
		v, err := time.ParseDuration(n.Value)
		if err != nil {
			return fmt.Errorf("want a duration (seconds or a string like \"30s\"), got %s", DescribeNode(n))
		}
		*d = Duration(v)
		return nil
	}
	return fmt.Errorf("want a duration (seconds or a string like \"30s\"), got %s", DescribeNode(n))
}

// maxAliasHops bounds the alias chain DescribeNode follows.
const maxAliasHops = 64

// DescribeNode renders a YAML node for "got …" in error messages — strings
// quoted, other scalars as written (cut at 60 bytes), collections by kind.
// pump/config's decoder words its errors with it too.
func DescribeNode(n *yaml.Node) string {
	for hops := 0; n.Kind == yaml.AliasNode && n.Alias != nil && hops < maxAliasHops; hops++ {
		n = n.Alias
	}
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		v := n.Value
		if len(v) > 60 {
			v = v[:57] + "..."
		}
		if n.ShortTag() == "!!str" {
			return strconv.Quote(v)
		}
		if n.ShortTag() == "!!null" {
			return "null"
		}
		return v
	}
	return "an unexpected node"
}
