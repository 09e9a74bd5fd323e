package stage

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestEnvelopePayload: the payload of a canonical envelope, whatever the
// root's prefix, with processing instructions around the root, a foreign
// element called meta inside <meta> and blanks around the payload; and no
// payload for what is not an envelope.
func TestEnvelopePayload(t *testing.T) {
	const th = `<thread>550e8400-e29b-41d4-a716-446655440000</thread>`
	const ns = `https://xml-pipeline.org/ns/envelope/v1`
	tests := []struct {
		name, env, want string
		ok              bool
	}{
		{"default namespace", `<message xmlns="` + ns + `"><meta><from>a</from>` + th + `</meta><Greeting xmlns=""><Name>Dan</Name></Greeting></message>`,
			`<Greeting xmlns=""><Name>Dan</Name></Greeting>`, true},
		{"ns0 prefix", `<ns0:message xmlns:ns0="` + ns + `"><ns0:meta><ns0:from>a</ns0:from></ns0:meta><Greeting><Name>Dan</Name></Greeting></ns0:message>`,
			`<Greeting><Name>Dan</Name></Greeting>`, true},
		{"payload named message", `<ns0:message xmlns:ns0="` + ns + `"><ns0:meta></ns0:meta><message><message></message></message></ns0:message>`,
			`<message><message></message></message>`, true},
		{"foreign meta in meta", `<message xmlns="` + ns + `"><meta><from>a</from>` + th + `<x:meta xmlns:x="urn:x">1</x:meta></meta><P xmlns=""><q a="&lt;"></q></P></message>`,
			`<P xmlns=""><q a="&lt;"></q></P>`, true},
		{"processing instructions", "<?pi x?>\n<message xmlns=\"" + ns + "\"><meta>" + th + "</meta><P xmlns=\"\"><?q <a>?></P></message>\n<?pi x?>",
			`<P xmlns=""><?q <a>?></P>`, true},
		{"blanks", "<message xmlns=\"" + ns + "\">\n  <meta>" + th + "</meta>\n  <P xmlns=\"\"></P>\n</message>", `<P xmlns=""></P>`, true},
		{"not an envelope", `not an envelope`, ``, false},
		{"no payload", `<message><meta></meta></message>`, ``, false},
		{"unterminated", `<message><meta></meta><P>`, ``, false},
		{"empty", ``, ``, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := EnvelopePayload([]byte(tt.env))
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v (payload %q)", ok, tt.ok, got)
			}
			if diff := cmp.Diff(tt.want, string(got)); diff != "" {
				t.Errorf("payload (-want +got):\n%s", diff)
			}
		})
	}
}

// FuzzEnvelopePayload: any bytes are cut without a panic, to a slice of the
// input that is empty exactly when there is no payload.
func FuzzEnvelopePayload(f *testing.F) {
	for _, s := range []string{`<message><meta></meta><P></P></message>`, `<?a?><a:m><a:meta/><P>`, `<`, `<?`, `</`, `<a></a`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, env []byte) {
		p, ok := EnvelopePayload(env)
		if ok != (len(p) > 0) {
			t.Fatalf("EnvelopePayload(%q) = %q, %v", env, p, ok)
		}
	})
}
