package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestToolTypoReportedAtTools checks that a typo in tools: with
// tool_config: under the right name is told at the tools: entry, with the
// name it likely meant, and not as "not listed in tools" at tool_config:
// (which fixing the typo would make false). A tool_config for a tool that
// is listed under no similar name keeps its error.
func TestToolTypoReportedAtTools(t *testing.T) {
	for _, tc := range []struct {
		name, tools, config string
		want                []string
	}{
		{"typo in tools", "[calculte]", "calculate: {max_exponent: 3}", []string{
			`t.yaml:7: listeners[0].tools[0]: tool "calculte" is not "calculate", which tool_config configures (did you mean "calculate"?)`}},
		{"typo, second entry", "[fetch, librarain]", "librarian: {max_bytes: 10}", []string{
			`t.yaml:7: listeners[0].tools[1]: tool "librarain" is not "librarian", which tool_config configures (did you mean "librarian"?)`}},
		{"unrelated", "[fetch]", "calculate: {max_exponent: 3}", []string{
			`t.yaml:9: listeners[0].tool_config.calculate: tool "calculate" is not listed in tools (nor is this listener the tool)`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			yaml := `organism: {name: t}
listeners:
  - name: a
    payload_class: p
    handler: h
    description: d
    tools: ` + tc.tools + `
    tool_config:
      ` + tc.config + "\n"
			_, err := Parse("t.yaml", []byte(yaml))
			if err == nil {
				t.Fatal("no error")
			}
			got := strings.Split(err.Error(), "\n")
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("errors (-want +got):\n%s", d)
			}
		})
	}
}
