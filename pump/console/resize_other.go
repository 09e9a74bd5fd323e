//go:build !unix

package console

// onResize does nothing where the terminal does not signal size changes; the
// size read at start stays in effect.
func onResize(func()) (stop func()) { return func() {} }
