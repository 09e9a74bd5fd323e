package stage

import (
	"fmt"

	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/internal/payloadschema"
)

// ValidatePayload validates the payload element against pt's schema, in the
// same parsed document (no re-parse).
func (m *Inbound) ValidatePayload(pt *xmlpipe.PayloadType) error {
	if !pt.Matches(m.PayloadName, m.PayloadNS) {
		return fail(failure.StagePayload, failure.ErrPayloadInvalid, failure.Diagnostic{Stage: failure.StagePayload, Line: m.payload.Line(),
			Msg: fmt.Sprintf("payload root {%s}%s is not {%s}%s", m.PayloadNS, m.PayloadName, pt.Namespace(), pt.Name())})
	}
	if errs := payloadschema.Of(pt).ValidateElement(m.payload); errs != nil {
		return fail(failure.StagePayload, failure.ErrPayloadInvalid, diagsOf(failure.StagePayload, errs)...)
	}
	return nil
}

// Decode validates the payload against pt and decodes it: stages 7a and 7b.
func (m *Inbound) Decode(pt *xmlpipe.PayloadType) (any, []byte, error) {
	if err := m.ValidatePayload(pt); err != nil {
		return nil, nil, err
	}
	b, err := m.PayloadBytes()
	if err != nil {
		return nil, nil, err
	}
	v, err := pt.Decode(b)
	return v, b, err
}
