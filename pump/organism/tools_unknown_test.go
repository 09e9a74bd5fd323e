package organism

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// An unknown tool in a listener's tools is a configuration error at its
// own place in the file — path included — with the tool a typo meant, else
// the known tools, as an unknown key or peer is told.
func TestUnknownToolNamed(t *testing.T) {
	tests := []struct {
		name  string
		tools string
		want  []string
	}{
		{"typo", "[calculat]", []string{`organism.yaml:7: listeners[0].tools[0]: unknown tool "calculat" (did you mean "calculate"?)`}},
		{"no tool close", "[teleport]", []string{`organism.yaml:7: listeners[0].tools[0]: unknown tool "teleport" (known: calculate, fetch, files, json_to_xml, key_value, librarian, run_command, web_search, xml_extract, xml_to_json)`}},
		{"each one", "[fles, calculate, fetchh]", []string{
			`organism.yaml:7: listeners[0].tools[0]: unknown tool "fles" (did you mean "files"?)`,
			`organism.yaml:7: listeners[0].tools[2]: unknown tool "fetchh" (did you mean "fetch"?)`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := config.Parse("organism.yaml", []byte(`organism: {name: tools}
listeners:
  - name: researcher
    description: Looks things up
    agent: true
    prompt: You look things up.
    tools: `+tt.tools+"\n"))
			if err != nil {
				t.Fatal(err)
			}
			_, err = New(cfg, Options{})
			if err == nil {
				t.Fatal("New accepted an unknown tool")
			}
			if !errors.Is(err, config.ErrConfig) {
				t.Errorf("error does not wrap config.ErrConfig: %v", err)
			}
			if diff := cmp.Diff(tt.want, strings.Split(err.Error(), "\n")); diff != "" {
				t.Errorf("error lines (-want +got):\n%s", diff)
			}
		})
	}
}
