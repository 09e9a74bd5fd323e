package organism

import (
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/regfile/regfiletest"
)

// TestWasmStampNeverBlocksOnAFIFO: a reload digests a wasm entry's module
// and xsd; one that is a FIFO digests as its error at once instead of
// blocking the reload.
func TestWasmStampNeverBlocksOnAFIFO(t *testing.T) {
	fifo := regfiletest.FIFO(t, "calc.xsd")
	var a, b string
	regfiletest.Prompt(t, fifo, func() error {
		a = wasmStamp(config.Listener{Name: "calc", XSD: fifo})
		b = wasmStamp(config.Listener{Name: "calc", XSD: fifo + ".missing"})
		return nil
	})
	if a == "" || a == b {
		t.Errorf("stamps %q (FIFO) and %q (missing) should differ", a, b)
	}
}
