package config

import (
	"errors"
	"testing"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/regfile"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/regfile/regfiletest"
)

// TestLoadDotEnvRefusesAFIFO: a .env that is a FIFO is refused at once
// instead of blocking the organism's start.
func TestLoadDotEnvRefusesAFIFO(t *testing.T) {
	fifo := regfiletest.FIFO(t, ".env")
	err := regfiletest.Prompt(t, fifo, func() error { return LoadDotEnv(fifo) })
	if !errors.Is(err, regfile.ErrNotRegular) {
		t.Errorf("err = %v, want regfile.ErrNotRegular", err)
	}
}
