package console

import "io"

// ScreenInterrupts gives the external tests the terminal's Ctrl-C
// screening that RunTerminal's caller puts in front of a real terminal.
func (c *Console) ScreenInterrupts(in io.Reader) io.Reader { return c.screenInterrupts(in) }
