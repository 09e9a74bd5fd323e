package pump_test

import (
	"context"
	"encoding/xml"
	"sync"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// codeXSD is the fixed schema of Code: its text must be three capitals,
// which the schema derived from the Go type (any string) does not say.
const codeXSD = `<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" targetNamespace="urn:test:code" elementFormDefault="qualified">
  <xs:element name="code"><xs:complexType><xs:sequence>
    <xs:element name="value"><xs:simpleType><xs:restriction base="xs:string"><xs:pattern value="[A-Z]{3}"/></xs:restriction></xs:simpleType></xs:element>
  </xs:sequence></xs:complexType></xs:element>
</xs:schema>`

// Code is a payload whose contract is codeXSD (xmlpipe.FixedPayload).
type Code struct {
	XMLName xml.Name `xml:"urn:test:code code"`
	Value   string   `xml:"value"`
}

var (
	codeOnce sync.Once
	codeType *xmlpipe.PayloadType
	codeErr  error
)

// PayloadType returns Code's fixed-schema payload type.
func (Code) PayloadType() (*xmlpipe.PayloadType, error) {
	codeOnce.Do(func() { codeType, codeErr = xmlpipe.PayloadTypeOf[Code](xmlpipe.WithSchema([]byte(codeXSD))) })
	return codeType, codeErr
}

// Ask is what the test sends to the coder.
type Ask struct{ Value string }

// TestFixedPayloadOutputValidatedAgainstItsSchema: a handler's output of a
// FixedPayload type re-enters validated against the fixed schema, so output
// the derived schema would accept but the fixed one refuses never reaches
// the caller; conforming output does.
func TestFixedPayloadOutputValidatedAgainstItsSchema(t *testing.T) {
	coder := listenerOf(t, "coder", func(_ context.Context, a *Ask, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		return xmlpipe.Respond(&Code{Value: a.Value}), nil
	})
	p := startPump(t, pump.Options{}, coder)
	for _, tc := range []struct {
		value         string
		replies, huhs int
	}{
		{"ABC", 1, 0},
		{"abcd", 0, 1}, // refused on re-entry; the <huh> goes to the client (coder has no error handler)
	} {
		rec := newRecorder()
		thread := stage.NewThreadID()
		if err := p.Inject(context.Background(), envelope(client, "coder", thread, `<Ask xmlns=""><Value>`+tc.value+`</Value></Ask>`), rec); err != nil {
			t.Fatal(err)
		}
		rec.waitFor(t, "completion", kind(pump.EventComplete))
		if n := rec.count(kind(pump.EventReply)); n != tc.replies {
			t.Errorf("output %q: %d replies, want %d; events:\n%s", tc.value, n, tc.replies, describe(rec.snapshot()))
		}
		if n := rec.count(kind(pump.EventHuh)); n != tc.huhs {
			t.Errorf("output %q: %d huhs, want %d; events:\n%s", tc.value, n, tc.huhs, describe(rec.snapshot()))
		}
	}
	if st := p.Stats(); st.Failed != 1 {
		t.Errorf("%d failed messages, want 1 (the refused output)", st.Failed)
	}
}
