package failure_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
)

func TestDiagnosticString(t *testing.T) {
	for _, tt := range []struct {
		name string
		d    failure.Diagnostic
		want string
	}{
		{"everything", failure.Diagnostic{Stage: failure.StagePayload, Line: 1, Path: "/*/Greeting/Nam", Msg: "not expected"},
			"payload line 1 /*/Greeting/Nam: not expected"},
		{"stage only", failure.Diagnostic{Stage: failure.StageRoute, Msg: "no listener"}, "route: no listener"},
		{"line and path, no stage", failure.Diagnostic{Line: 3, Path: "/a", Msg: "bad"}, "line 3 /a: bad"},
		{"message only", failure.Diagnostic{Msg: "conversation killed"}, "conversation killed"},
	} {
		if diff := cmp.Diff(tt.want, tt.d.String()); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
}
