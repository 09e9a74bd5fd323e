package codec

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzDecode feeds arbitrary bytes to the decoders of several payload types.
// Decode must never panic, and whatever decodes must re-encode (to well-formed
// XML) and decode again to an equal value. Seeds live in testdata/fuzz/FuzzDecode.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`<GreetingResponse xmlns=""><Message>Hello Dan!</Message><OriginalSender>response-handler</OriginalSender></GreetingResponse>`))
	f.Add([]byte(`<Greeting><Name>007 <![CDATA[x]]>&amp;&#xD;</Name></Greeting>`))
	codecs := []*Codec{mustCodec[Greeting](f), mustCodec[GreetingResponse](f), mustCodec[Order](f), mustCodec[AllKinds](f)}
	for _, c := range codecs[2:] {
		var v any = fullOrder()
		if c == codecs[3] {
			v = fullAllKinds()
		}
		b, err := c.Append(nil, v, false)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, c := range codecs {
			v, err := c.Decode(data)
			if err != nil {
				continue
			}
			for _, emptyNS := range []bool{false, true} {
				b, err := c.Append(nil, v, emptyNS)
				if err != nil {
					t.Fatalf("%s: decoded value does not re-encode: %v\ninput: %q", c.Type().Name, err, data)
				}
				if err := wellFormed(b); err != nil {
					t.Fatalf("%s: re-encoding is not well-formed: %v\n%q", c.Type().Name, err, b)
				}
				v2, err := c.Decode(b)
				if err != nil {
					t.Fatalf("%s: re-encoding does not decode: %v\n%q", c.Type().Name, err, b)
				}
				if diff := cmp.Diff(v, v2, equalOpts); diff != "" {
					t.Fatalf("%s: round trip changed the value (-first +second):\n%s\ninput: %q", c.Type().Name, diff, data)
				}
			}
		}
	})
}
