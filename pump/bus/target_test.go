package bus

import (
	"regexp"
	"testing"
)

// targetPattern is the reference's TARGET_PATTERN, the oracle of
// splitTarget.
var targetPattern = regexp.MustCompile(`(?s)^@(\S+)\s+(.+)$`)

var targetSeeds = []string{
	"@greeter Dan", "@greeter  Dan  ", "@greeter\tDan\nand more", "@greeter", "@ greeter", "@", "", "greeter Dan",
	"@a  ", "@a ", "@a \t", "@a\vb c", "@ü x", "@a\xffb c", "@a\u00a0b c", "@@ x", "@a\f\rb",
}

func TestSplitTargetMatchesPattern(t *testing.T) {
	for _, s := range targetSeeds {
		checkSplitTarget(t, s)
	}
}

func checkSplitTarget(t *testing.T, s string) {
	t.Helper()
	target, text, ok := splitTarget(s)
	m := targetPattern.FindStringSubmatch(s)
	if ok != (m != nil) || ok && (target != m[1] || text != m[2]) {
		t.Fatalf("splitTarget(%q) = %q, %q, %v; pattern %q", s, target, text, ok, m)
	}
}

// FuzzSplitTarget holds splitTarget to the reference's pattern.
func FuzzSplitTarget(f *testing.F) {
	for _, s := range targetSeeds {
		f.Add(s)
	}
	f.Fuzz(checkSplitTarget)
}
