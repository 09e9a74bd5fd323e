package certs

import (
	"errors"
	"testing"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/regfile"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/regfile/regfiletest"
)

// TestLoadRefusesAFIFO: a tls cert or key path naming a FIFO is refused at
// once instead of blocking the organism's start.
func TestLoadRefusesAFIFO(t *testing.T) {
	fifo := regfiletest.FIFO(t, "bus.pem")
	err := regfiletest.Prompt(t, fifo, func() error { _, err := Load(fifo, fifo); return err })
	if !errors.Is(err, regfile.ErrNotRegular) {
		t.Errorf("err = %v, want regfile.ErrNotRegular", err)
	}
}
