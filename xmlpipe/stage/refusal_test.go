package stage

import (
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"strings"
	"testing"
)

func TestRefusalRoundTrip(t *testing.T) {
	core, err := Core()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		r    *xmlpipe.Refusal
		want string
	}{
		{"rule", NewRefusal("Destructive shell commands are forbidden", "Use the files tool", SeverityHigh, "no-rm-rf"),
			`<refusal xmlns="https://xml-pipeline.org/ns/core/v1"><status>refused</status><reason>Destructive shell commands are forbidden</reason><violated-rule>no-rm-rf</violated-rule><suggestion>Use the files tool</suggestion><severity>high</severity></refusal>`},
		{"human, escaped", NewRefusal("denied by alice: <no> & never", "", "bogus"),
			`<refusal xmlns="https://xml-pipeline.org/ns/core/v1"><status>refused</status><reason>denied by alice: &lt;no&gt; &amp; never</reason><severity>medium</severity></refusal>`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := core.Refusal.AppendPayload(nil, tt.r)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Fatalf("encoded\n got %s\nwant %s", b, tt.want)
			}
			v, err := core.Refusal.Decode(b)
			if err != nil {
				t.Fatal(err)
			}
			got := v.(*xmlpipe.Refusal)
			if got.Summary() != tt.r.Summary() || got.Severity != tt.r.Severity {
				t.Fatalf("decoded %+v, want %+v", got, tt.r)
			}
		})
	}
	if s := NewRefusal("r", "s", SeverityLow, "a", "b").Summary(); !strings.Contains(s, "rule a, b") || !strings.Contains(s, "— s") {
		t.Fatalf("summary %q", s)
	}
}
