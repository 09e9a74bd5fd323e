package organism

import "github.com/xml-pipeline/xmlpipe/pump"

// ErrShutDown means the organism was shut down (Shutdown, ShutdownNow,
// Stop), whether or not it had started: Ask, AskText, Continue and
// ContinueText refuse with it before looking at what they were asked. It
// matches pump.ErrClosed and pump.ErrShutdown too.
var ErrShutDown error = shutDownError("organism: shut down")

// shutDownError is ErrShutDown's type: it also matches the pump's own
// errors of a stopped pump.
type shutDownError string

func (e shutDownError) Error() string { return string(e) }

// Is reports whether target is pump.ErrClosed or pump.ErrShutdown.
func (e shutDownError) Is(target error) bool {
	return target == pump.ErrClosed || target == pump.ErrShutdown
}

// checkRunning returns ErrShutDown once a shutdown of the organism began.
func (o *Organism) checkRunning() error {
	o.shutMu.Lock()
	defer o.shutMu.Unlock()
	if o.shutting {
		return ErrShutDown
	}
	return nil
}
