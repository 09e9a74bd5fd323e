package oob

import "testing"

// payloadOf finds the payload of a canonical envelope also when the
// envelope is prefixed (<ns0:message>, as Python's ElementTree writes it)
// and when <meta> holds a foreign element of its own called meta.
func TestPayloadOf(t *testing.T) {
	const th = `<thread>550e8400-e29b-41d4-a716-446655440000</thread>`
	tests := []struct{ env, want string }{
		{`<message xmlns="https://xml-pipeline.org/ns/envelope/v1"><meta><from>a</from>` + th + `</meta><Greeting xmlns=""><Name>Dan</Name></Greeting></message>`,
			`<Greeting xmlns=""><Name>Dan</Name></Greeting>`},
		{`<ns0:message xmlns:ns0="https://xml-pipeline.org/ns/envelope/v1"><ns0:meta><ns0:from>a</ns0:from><ns0:thread>t</ns0:thread></ns0:meta><Greeting><Name>Dan</Name></Greeting></ns0:message>`,
			`<Greeting><Name>Dan</Name></Greeting>`},
		{`<message xmlns="https://xml-pipeline.org/ns/envelope/v1"><meta><from>a</from>` + th + `<x:meta xmlns:x="urn:x">1</x:meta></meta><P xmlns=""><q a="&lt;"></q></P></message>`,
			`<P xmlns=""><q a="&lt;"></q></P>`},
		{`<?pi x?><message xmlns="https://xml-pipeline.org/ns/envelope/v1"><meta><from>a</from>` + th + `</meta><P xmlns=""></P></message>`,
			`<P xmlns=""></P>`},
		{`not an envelope`, `not an envelope`},
		{`<message><meta></meta></message>`, `<message><meta></meta></message>`},
	}
	for _, tt := range tests {
		if got := string(payloadOf([]byte(tt.env))); got != tt.want {
			t.Errorf("payloadOf(%s)\n = %s\nwant %s", tt.env, got, tt.want)
		}
	}
}
