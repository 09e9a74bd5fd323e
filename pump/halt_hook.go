package pump

// HaltChange is a halt begun or lifted (OnHaltChange).
type HaltChange struct {
	// Halted is true for a halt begun (Halt, HaltListener), false for one
	// lifted (Unhalt, UnhaltListener).
	Halted bool
	// Listener is the listener halted or resumed one by one ("": the halt
	// of Halt's scope, or Unhalt).
	Listener string
	// Report is a halt's report (zero for a lift).
	Report HaltReport
}

// OnHaltChange sets fn to be told of every halt begun or lifted through
// Halt, HaltListener, Unhalt or UnhaltListener — whoever called them —
// once it is in force, on the caller's goroutine (nil: none). An organism's
// governance sets it, so that a halt made on its pump directly is logged,
// told to its subscribers and kept across a restart like its own.
func (p *Pump) OnHaltChange(fn func(HaltChange)) {
	if fn == nil {
		p.onHalt.Store(nil)
		return
	}
	p.onHalt.Store(&fn)
}

// haltChanged tells the OnHaltChange hook of c.
func (p *Pump) haltChanged(c HaltChange) {
	if fn := p.onHalt.Load(); fn != nil {
		(*fn)(c)
	}
}
