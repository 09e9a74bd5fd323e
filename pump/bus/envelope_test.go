package bus

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPayloadOf(t *testing.T) {
	const env = `<message xmlns="https://xml-pipeline.org/ns/envelope/v1"><meta><from>a</from><thread>t</thread></meta>`
	tests := []struct{ in, want string }{
		{env + `<Greeting xmlns=""><Name>Dan</Name></Greeting></message>`, `<Greeting><Name>Dan</Name></Greeting>`},
		{env + `<p:Order xmlns:p="urn:o" id="a&gt;b"><p:Item>x</p:Item></p:Order></message>`,
			`<p:Order xmlns:p="urn:o" id="a&gt;b"><p:Item>x</p:Item></p:Order>`},
		{env + `<Empty xmlns=""></Empty></message>`, `<Empty></Empty>`},
		{`<?pi x?>` + env + `<A xmlns="urn:a"></A></message>`, `<A xmlns="urn:a"></A>`},
		{env + `</message>`, ``},
		{`not xml`, ``},
	}
	for _, tt := range tests {
		if got := string(payloadOf([]byte(tt.in))); got != tt.want {
			t.Errorf("payloadOf(%s) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestWithEmptyNamespace(t *testing.T) {
	tests := []struct{ in, want, err string }{
		{`<Greeting><Name>Dan</Name></Greeting>`, `<Greeting xmlns=""><Name>Dan</Name></Greeting>`, ""},
		{` <?xml version="1.0"?> <Greeting/> `, `<Greeting xmlns=""/>`, ""},
		{`<Greeting xmlns="urn:g"><Name>Dan</Name></Greeting>`, `<Greeting xmlns="urn:g"><Name>Dan</Name></Greeting>`, ""},
		{"<Greeting\n a='1'/>", "<Greeting xmlns=\"\"\n a='1'/>", ""},
		{`<a/><b/>`, "", "payload has more than one root element"},
		{`text`, "", "payload must start with its root element"},
		{`<!-- c --><a/>`, "", "payload must start with its root element"},
		{`<a>`, "", "payload is not well-formed XML: XML syntax error on line 1: unexpected EOF"},
		{`<a/>tail`, "", "payload has text outside its root element"},
	}
	for _, tt := range tests {
		got, err := withEmptyNamespace(tt.in)
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if string(got) != tt.want || gotErr != tt.err {
			t.Errorf("withEmptyNamespace(%q) = %q, %q; want %q, %q", tt.in, got, gotErr, tt.want, tt.err)
		}
	}
}

func TestScanFrame(t *testing.T) {
	tests := []struct {
		in   string
		want frameInfo
	}{
		{envelope("c", "t-1", "Dan"), frameInfo{ok: true, rootNS: "https://xml-pipeline.org/ns/envelope/v1",
			rootName: "message", from: "c", to: "greeter", thread: "t-1", payloadName: "Greeting"}},
		{`<privileged-msg xmlns="https://xml-pipeline.org/privileged-msg"/>`, frameInfo{ok: true,
			rootNS: "https://xml-pipeline.org/privileged-msg", rootName: "privileged-msg"}},
		{`<a>x & y</a>`, frameInfo{ok: true, rootName: "a"}},
		{`<!DOCTYPE a><a/>`, frameInfo{}},
		{``, frameInfo{}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, scanFrame([]byte(tt.in)), cmp.AllowUnexported(frameInfo{})); diff != "" {
			t.Errorf("scanFrame(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}
