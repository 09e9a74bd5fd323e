package organism

import (
	"encoding/base64"
	"testing"
)

// TestHuhCarriesMemory: a <huh> whose original attempt is a memory request
// (bare, in an envelope, cut short, base64 as it travels) holds memory
// text; any other <huh>, or a payload that is no <huh>, does not.
func TestHuhCarriesMemory(t *testing.T) {
	huh := func(attempt string) []byte {
		return []byte(`<message xmlns="https://xml-pipeline.org/ns/envelope/v1"><meta><from>core</from></meta>` +
			`<huh xmlns="https://xml-pipeline.org/ns/core/v1"><error>Message could not be processed</error>` +
			`<original-attempt>` + base64.StdEncoding.EncodeToString([]byte(attempt)) + `</original-attempt></huh></message>`)
	}
	for _, tc := range []struct {
		name string
		raw  []byte
		want bool
	}{
		{"request", huh(`<Remember><Content>Zoe</Content></Remember>`), true},
		{"request in an envelope", huh(`<message xmlns="https://xml-pipeline.org/ns/envelope/v1"><meta>` +
			`<from>keeper</from></meta><Remember xmlns=""><Content>Zoe</Content></Remember></message>`), true},
		{"request inheriting the envelope's namespace", huh(`<message xmlns="https://xml-pipeline.org/ns/envelope/v1">` +
			`<meta><from>keeper</from></meta><Remember><Content>Zoe</Content></Remember></message>`), true},
		{"request cut short", huh(`<Remember><Content>Zoe, born on`), true},
		{"another payload", huh(`<Greeting><Name>Remember</Name></Greeting>`), false},
		{"not XML", huh(`this is not xml`), false},
		{"no huh", []byte(`<Remember><Content>original-attempt</Content></Remember>`), false},
		{"a huh without attempt", []byte(`<huh xmlns="https://xml-pipeline.org/ns/core/v1"><error>x</error></huh>`), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := HuhCarriesMemory(tc.raw); got != tc.want {
				t.Errorf("HuhCarriesMemory(%s) = %v, want %v", tc.raw, got, tc.want)
			}
		})
	}
}
