package config

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeAgentBlocksHaveRequiredKeys: every YAML block of the README
// that declares an agent gives it the keys a listener needs, so a reader
// who copies a block (an approval list, memory, loop control) into an
// organism.yaml is not stopped by a "missing required key".
func TestReadmeAgentBlocksHaveRequiredKeys(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(readme), -1)
	checked := 0
	for _, b := range blocks {
		if !strings.Contains(b[1], "agent: true") {
			continue
		}
		checked++
		_, err := Parse("README.md", []byte(b[1]))
		if err == nil {
			continue
		}
		for _, line := range strings.Split(err.Error(), "\n") {
			if strings.Contains(line, "missing required key") {
				t.Errorf("README block %q…: %s", firstLine(b[1]), line)
			}
		}
	}
	if checked < 3 {
		t.Fatalf("%d README blocks declare an agent, want at least 3", checked)
	}
}

// firstLine is s's first non-empty line.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			return l
		}
	}
	return ""
}
