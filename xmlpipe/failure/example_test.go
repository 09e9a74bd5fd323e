package failure_test

import (
	"fmt"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
)

// A message refused for a payload that matches no listener's schema and one
// addressed to no listener at all tell their sender the same canned text, so
// errors never reveal the organism's topology; the diagnostics, which do say
// what was wrong, go to the log, the journal and the OOB channel only.
func ExampleCannedText() {
	wrongSchema := &failure.Failure{Stage: failure.StagePayload, Err: failure.ErrPayloadInvalid,
		Diagnostics: []failure.Diagnostic{{Stage: failure.StagePayload, Line: 1, Msg: "element Nme not expected"}}}
	noRoute := &failure.Failure{Stage: failure.StageRoute, Err: failure.ErrNoRoute}
	fmt.Printf("%q\n%q\n", failure.CannedText(wrongSchema), failure.CannedText(noRoute))
	fmt.Println(wrongSchema.Error())
	// Output:
	// "Invalid payload structure"
	// "Invalid payload structure"
	// payload: payload does not match the listener schema; line 1 element Nme not expected
}
