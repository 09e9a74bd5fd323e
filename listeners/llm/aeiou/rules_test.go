package aeiou

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

// TestRulesV3Verbatim pins RulesV3 to the SHA-256 of the §14 block of
// shared/seeds/002 (the text between its ``` fences).
func TestRulesV3Verbatim(t *testing.T) {
	sum := sha256.Sum256([]byte(RulesV3))
	if got := hex.EncodeToString(sum[:]); got != "f2774af6bc8c833e10b845103c93318116666325ebb1a8ece418de7e79fd1118" {
		t.Fatalf("RulesV3 is not the verbatim section 14 text (sha256 %s)", got)
	}
}

// TestRulesNativeTool checks that the adapted rules name the tool and the
// placement rule.
func TestRulesNativeTool(t *testing.T) {
	for _, want := range []string{ToolName, "DO NOT hand-type tokens", "verbatim", "LAST line", `"continue" | "done" | "abort"`, "never scanned for control"} {
		if !strings.Contains(Rules, want) {
			t.Errorf("Rules lacks %q", want)
		}
	}
}
