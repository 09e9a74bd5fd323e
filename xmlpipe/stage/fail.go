package stage

import "github.com/xml-pipeline/xmlpipe/xmlpipe/failure"

// fail builds the *failure.Failure of a stage.
func fail(stage failure.Stage, err error, diags ...failure.Diagnostic) *failure.Failure {
	return &failure.Failure{Stage: stage, Err: err, Diagnostics: diags}
}
