package stage

import (
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/internal/lx"
)

// Canonicalize returns the exclusive C14N 1.0 (without comments) of a complete
// document. It parses strictly (no repair, DOCTYPE rejected) and never resolves
// entities or touches the network.
func Canonicalize(b []byte) ([]byte, error) {
	if len(b) == 0 {
		return nil, fail(failure.StageParse, failure.ErrEmpty)
	}
	if hasDoctype(b) {
		return nil, fail(failure.StageParse, failure.ErrDoctype, failure.Diagnostic{Stage: failure.StageParse, Msg: "document type declarations are rejected"})
	}
	doc, errs := lx.Parse(b, lx.OptNoNet)
	if doc == nil || errs.Severe() {
		doc.Free()
		return nil, fail(failure.StageParse, failure.ErrMalformed, diagsOf(failure.StageParse, errs)...)
	}
	defer doc.Free()
	if doc.HasDTD() {
		return nil, fail(failure.StageParse, failure.ErrDoctype)
	}
	out, err := doc.C14N(lx.Node{}, lx.C14NExc10, false, nil)
	if err != nil {
		return nil, fail(failure.StageC14N, failure.ErrMalformed, failure.Diagnostic{Stage: failure.StageC14N, Msg: err.Error()})
	}
	return out, nil
}
