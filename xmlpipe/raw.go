package xmlpipe

import (
	"fmt"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/internal/lx"
)

// RawPayload is one root element found in raw handler or LLM text.
type RawPayload struct {
	Name, Namespace string
	// Bytes is the exclusive C14N of the element.
	Bytes []byte
}

// SplitRaw is the multi-payload extraction of raw handler/LLM output: the text is
// wrapped in a dummy root, lexically fixed and parsed in recover mode, and every
// element directly under the dummy root becomes its own payload (text between
// them — the model's prose — is ignored). Repairs are reported as diagnostics.
// Text with no element yields no payloads and no error.
func SplitRaw(raw []byte) ([]RawPayload, []Diagnostic, error) {
	if len(raw) > 0 && hasDoctype(raw) {
		return nil, nil, fail(StageParse, ErrDoctype, Diagnostic{Stage: StageParse, Msg: "document type declarations are rejected"})
	}
	wrapped := make([]byte, 0, len(raw)+32)
	wrapped = append(wrapped, "<xmlpipe-dummy>"...)
	wrapped = append(wrapped, raw...)
	wrapped = append(wrapped, "</xmlpipe-dummy>"...)
	const strict = lx.OptNoNet | lx.OptNoBlanks
	doc, errs := lx.Parse(wrapped, strict)
	var diags []Diagnostic
	if doc == nil || errs.Severe() || doc.HasDTD() {
		doc.Free()
		diags = diagsOf(StageParse, errs)
		fixed, fixes := LexFix(wrapped)
		diags = append(diags, fixes...)
		doc, errs = lx.Parse(fixed, strict|lx.OptRecover)
		if doc == nil || doc.Root().IsZero() {
			doc.Free()
			return nil, diags, fail(StageRepair, ErrMalformed, append(diags, diagsOf(StageRepair, errs)...)...)
		}
		if doc.HasDTD() {
			doc.Free()
			return nil, diags, fail(StageParse, ErrDoctype)
		}
	}
	defer doc.Free()
	var out []RawPayload
	for c := doc.Root().FirstElement(); !c.IsZero(); c = c.NextElement() {
		b, err := doc.C14N(c, lx.C14NExc10, false, nil)
		if err != nil {
			diags = append(diags, Diagnostic{Stage: StageC14N, Line: c.Line(), Msg: fmt.Sprintf("element <%s> dropped: %v", c.Name(), err)})
			continue
		}
		out = append(out, RawPayload{Name: c.Name(), Namespace: c.Namespace(), Bytes: b})
	}
	return out, diags, nil
}
