package oob

import "time"

// reloadAnswerWithin is how long a reload may take before it answers: it
// builds what it adds first (MCP servers started and connected, each
// within its own timeout, WASM modules compiled), then relinks the
// gateways it changes, for up to 30 s. It is no hard bound on the
// organism's side, only what ctl waits for.
const reloadAnswerWithin = 90 * time.Second

// AnswerWithin is the longest the organism may wait inside operation op
// before it answers — for a listener's running handlers to finish, for the
// ingress stages, for a gateway to stop — or zero for an operation it
// answers at once. A client's deadline for op must exceed it by the time
// a request takes anyway, or the client gives up on an operation that the
// organism then completes.
func AnswerWithin(op string) time.Duration {
	switch op {
	case "unregister-listener", "register-listener":
		// register-listener removes what it could not store.
		return unregisterTimeout
	case "inject-message":
		return injectTimeout
	case "register-remote-gateway", "unregister-remote-gateway":
		return gatewayStopTimeout
	case "reload":
		return reloadAnswerWithin
	}
	return 0
}
