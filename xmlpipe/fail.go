package xmlpipe

import "github.com/xml-pipeline/xmlpipe/xmlpipe/failure"

// RoutingErrorMessage is the SystemError text of a peer violation (seed 001).
const RoutingErrorMessage = "Message could not be delivered. Please verify your target and try again."

func fail(stage failure.Stage, err error, diags ...failure.Diagnostic) *failure.Failure {
	return &failure.Failure{Stage: stage, Err: err, Diagnostics: diags}
}
