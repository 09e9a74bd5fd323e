package oob

import (
	"encoding/xml"
	"testing"
)

// FuzzHandle feeds arbitrary bytes to the OOB request handler, the channel's
// untrusted input: every answer is a response valid against
// privileged-msg.xsd, and nothing but a correctly signed, fresh, first-use
// request (the seed, once) is ever answered without an <error>.
func FuzzHandle(f *testing.F) {
	fx := newFixture(f, nil)
	signed, err := SignRequest(fx.owner, "seed", fx.clock(), []byte(`<get-status/>`))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(signed)
	f.Add([]byte(`<privileged-msg xmlns="https://xml-pipeline.org/ns/privileged/v1" version="1.1"><payload timestamp="2026-01-01T00:00:00Z"><get-status/></payload></privileged-msg>`))
	f.Add([]byte(`<!DOCTYPE x [<!ENTITY a "aaaa">]><x>&a;</x>`))
	f.Add([]byte("not xml at all"))
	f.Add([]byte{})
	accepted := 0
	f.Fuzz(func(t *testing.T, raw []byte) {
		out := fx.srv.Handle(raw)
		s, err := Schema()
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Validate(out); err != nil {
			t.Fatalf("answer not valid against privileged-msg.xsd: %v\n%s", err, out)
		}
		var r Response
		if err := xml.Unmarshal(out, &r); err != nil {
			t.Fatalf("answer does not parse: %v", err)
		}
		if code(&r) == "" {
			accepted++
			if string(raw) != string(signed) || accepted > 1 {
				t.Fatalf("request accepted (%d times): %q", accepted, raw)
			}
		}
	})
}
