package keys

import (
	"errors"
	"testing"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/regfile"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/regfile/regfiletest"
)

// TestReadRefusesAFIFO: a key path naming a FIFO (an identity:, a
// gateway's trusted_identity, also one stored over OOB) is refused at once
// instead of blocking the organism's start or reload.
func TestReadRefusesAFIFO(t *testing.T) {
	fifo := regfiletest.FIFO(t, "peer.pub")
	for name, read := range map[string]func() error{
		"ReadPublic":  func() error { _, err := ReadPublic(fifo); return err },
		"ReadPrivate": func() error { _, err := ReadPrivate(fifo); return err },
	} {
		if err := regfiletest.Prompt(t, fifo, read); !errors.Is(err, regfile.ErrNotRegular) {
			t.Errorf("%s: err = %v, want regfile.ErrNotRegular", name, err)
		}
	}
}
