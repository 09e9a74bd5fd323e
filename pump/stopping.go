package pump

// ErrStopping is what a handler returns, wrapped, when the organism's stop
// ended it before it could finish — a federated call still waiting on its
// peer when the stop ends such waits, so that a silent peer cannot hold the
// drain. The handling is then neither answered nor failed: a journaled
// message is left undelivered (as one cut by a drain that timed out), for
// Recover to re-deliver at the next start, where its handler takes its
// work up again. A message that is not journaled cannot be re-delivered:
// its sender gets a <huh> carrying the handler's error, as for any other
// failure. It wraps ErrShutdown.
var ErrStopping error = stoppingError{}

// stoppingError is ErrStopping: its own text (ErrShutdown's names an
// immediate shutdown), and an ErrShutdown.
type stoppingError struct{}

// Error names the stop.
func (stoppingError) Error() string { return "pump: the organism is stopping" }

// Unwrap makes it an ErrShutdown.
func (stoppingError) Unwrap() error { return ErrShutdown }
