package stage

import (
	"bytes"
	"fmt"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/internal/lx"
)

// RawPayload is one root element found in raw handler or LLM text.
type RawPayload struct {
	Name, Namespace string
	// Bytes is the exclusive C14N of the element.
	Bytes []byte
}

// TooManyPayloadsError reports raw output holding more payload elements
// than its producer may send at once (SplitRawMax). It unwraps to
// failure.ErrTooManyPayloads.
type TooManyPayloadsError struct {
	// Count is how many payload elements the output holds, Limit how many
	// it may.
	Count, Limit int
}

// Error says how many there were and how many are allowed.
func (e *TooManyPayloadsError) Error() string {
	return fmt.Sprintf("%d payload elements in one output, at most %d allowed", e.Count, e.Limit)
}

// Unwrap returns failure.ErrTooManyPayloads.
func (e *TooManyPayloadsError) Unwrap() error { return failure.ErrTooManyPayloads }

// SplitRaw is the multi-payload extraction of raw handler/LLM output: the text is
// wrapped in a dummy root, lexically fixed and parsed in recover mode, and every
// element directly under the dummy root becomes its own payload (text between
// them — the model's prose — is ignored). Repairs are reported as diagnostics.
// Text with no element yields no payloads and no error. It takes time linear
// in the text, whatever the number of elements. Bytes that are not UTF-8
// (a WebAssembly guest's output is whatever it wrote) become U+FFFD, with a
// repair diagnostic, so that every payload is well-formed XML.
func SplitRaw(raw []byte) ([]RawPayload, []failure.Diagnostic, error) {
	return SplitRawMax(raw, 0)
}

// SplitRawMax is SplitRaw that yields at most max payloads (max > 0): text
// holding more elements yields none, with a *failure.Failure wrapping a
// *TooManyPayloadsError, found by counting after the parse — before any
// element is canonicalised. max <= 0 means no limit.
func SplitRawMax(raw []byte, max int) ([]RawPayload, []failure.Diagnostic, error) {
	if len(raw) > 0 && hasDoctype(raw) {
		return nil, nil, fail(failure.StageParse, failure.ErrDoctype, failure.Diagnostic{Stage: failure.StageParse, Msg: "document type declarations are rejected"})
	}
	var diags []failure.Diagnostic
	if off := invalidUTF8(raw); off >= 0 {
		raw = bytes.ToValidUTF8(raw, []byte("\uFFFD"))
		diags = append(diags, failure.Diagnostic{Stage: failure.StageRepair,
			Msg: fmt.Sprintf("replaced the invalid UTF-8 from byte offset %d with U+FFFD", off)})
	}
	wrapped := make([]byte, 0, len(raw)+32)
	wrapped = append(wrapped, "<xmlpipe-dummy>"...)
	wrapped = append(wrapped, raw...)
	wrapped = append(wrapped, "</xmlpipe-dummy>"...)
	const strict = lx.OptNoNet | lx.OptNoBlanks
	doc, errs := lx.Parse(wrapped, strict)
	// repaired is set when the text parsed only in recover mode, whose
	// elements may still not be well-formed on their own (a name like ":").
	repaired := false
	if doc == nil || errs.Severe() || doc.HasDTD() {
		repaired = true
		doc.Free()
		diags = append(diags, diagsOf(failure.StageParse, errs)...)
		fixed, fixes := LexFix(wrapped)
		diags = append(diags, fixes...)
		doc, errs = lx.Parse(fixed, strict|lx.OptRecover)
		if doc == nil || doc.Root().IsZero() {
			doc.Free()
			return nil, diags, fail(failure.StageRepair, failure.ErrMalformed, append(diags, diagsOf(failure.StageRepair, errs)...)...)
		}
		if doc.HasDTD() {
			doc.Free()
			return nil, diags, fail(failure.StageParse, failure.ErrDoctype)
		}
	}
	defer doc.Free()
	n := 0
	for c := doc.Root().FirstElement(); !c.IsZero(); c = c.NextElement() {
		n++
	}
	if max > 0 && n > max {
		tooMany := &TooManyPayloadsError{Count: n, Limit: max}
		return nil, diags, fail(failure.StageExtract, tooMany, failure.Diagnostic{Stage: failure.StageExtract, Msg: tooMany.Error()})
	}
	out := make([]RawPayload, 0, n)
	for c := doc.Root().FirstElement(); !c.IsZero(); c = c.NextElement() {
		// In place, each C14N would walk the whole document: C14NChild
		// keeps the split linear.
		b, err := doc.C14NChild(c, lx.C14NExc10, false, nil)
		if err != nil {
			diags = append(diags, failure.Diagnostic{Stage: failure.StageC14N, Line: c.Line(), Msg: fmt.Sprintf("element <%s> dropped: %v", c.Name(), err)})
			continue
		}
		if repaired {
			part, err := parseStrict(b)
			if err != nil {
				diags = append(diags, failure.Diagnostic{Stage: failure.StageRepair, Line: c.Line(),
					Msg: fmt.Sprintf("element <%s> dropped: not well-formed once repaired: %v", c.Name(), err)})
				continue
			}
			part.Free()
		}
		out = append(out, RawPayload{Name: c.Name(), Namespace: c.Namespace(), Bytes: b})
	}
	return out, diags, nil
}
