package guardian

import (
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/regfile/regfiletest"
)

// TestLoadRefusesAFIFO: a guardian document path naming a FIFO is refused
// at once, naming the file, instead of blocking the organism's start.
func TestLoadRefusesAFIFO(t *testing.T) {
	fifo := regfiletest.FIFO(t, "policy.xml")
	err := regfiletest.Prompt(t, fifo, func() error { _, err := Load([]string{fifo}, nil); return err })
	if err == nil || !strings.Contains(err.Error(), fifo) || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("err = %v, want %s named as not a regular file", err, fifo)
	}
}
