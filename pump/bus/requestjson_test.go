package bus

import (
	"errors"
	"reflect"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump/bus/wire"
)

// requestSeeds are frames of every shape: the simple ones decodeRequest
// takes without reflection and the ones it leaves to encoding/json.
var requestSeeds = []string{
	`{"type":"send","id":7,"raw":"@greeter Dan"}`,
	` { "type" : "send" , "id" : "a-1" , "target" : "greeter" , "content" : "Dan" } `,
	`{"type":"send","id":-12,"thread_id":"0b6e2c1a-8a8a-4c5e-9d3f-2a1b3c4d5e6f","raw":"@greeter Dan"}`,
	`{"type":"ping"}`,
	`{}`,
	`{"type":"monitor","prefix":"*","text":"x","message":"ünïcødé"}`,
	`{"type":"send","id":1,"id":2}`,
	`{"type":"a","type":"b"}`,
	`{"type":"send","raw":"tab\tinside"}`,
	`{"type":"send","raw":"esc\"aped"}`,
	`{"type":"send","raw":"\ud83d\ude00"}`,
	`{"type":"send","raw":"\udc00"}`,
	`{"Type":"send"}`,
	`{"TYPE":"ping","ID":3}`,
	`{"type":"subscribe","events":["output"]}`,
	`{"type":"send","target":"t","payload":{"name":"Dan"}}`,
	`{"type":"send","payload":"<x/>"}`,
	`{"type":null}`,
	`{"type":"send","id":null}`,
	`{"type":"send","id":1.5}`,
	`{"type":"send","id":1e3}`,
	`{"type":"send","id":01}`,
	`{"type":"send","id":0}`,
	`{"type":"send","id":-0}`,
	`{"type":"send","id":-}`,
	`{"type":"send","id":true}`,
	`{"type":"send","id":{"a":1}}`,
	`{"type":5}`,
	`{"type":"send",}`,
	`{"type":"send"`,
	`{"type":"send"}x`,
	`{"type":"send"} `,
	`{"unknown":"x","type":"ping"}`,
	`[]`,
	`"send"`,
	``,
	`{"type":"send","raw":"` + "\xff" + `"}`,
	`{"type":"send","raw":"` + "\x01" + `"}`,
	`{"type" "send"}`,
	`{"type":"send" "id":1}`,
	`{type:"send"}`,
}

// decodeBoth decodes data with decodeRequest and with the reflective
// decodeJSON.
func decodeBoth(data []byte) (fast, slow wire.Request, fastErr, slowErr error) {
	fast, fastErr = decodeRequest(data)
	slowErr = decodeJSON(data, &slow)
	return
}

func TestDecodeRequestMatchesJSON(t *testing.T) {
	for _, s := range requestSeeds {
		fast, slow, fe, se := decodeBoth([]byte(s))
		if (fe == nil) != (se == nil) || fe != nil && errors.Is(fe, errJSONUTF8) != errors.Is(se, errJSONUTF8) {
			t.Errorf("%q: error %v, encoding/json %v", s, fe, se)
			continue
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Errorf("%q: decoded %+v, encoding/json %+v", s, fast, slow)
		}
	}
}

func TestFastRequestTakesSimpleFrames(t *testing.T) {
	for _, tc := range []struct {
		in   string
		fast bool
	}{
		{`{"type":"send","id":7,"raw":"@greeter Dan"}`, true},
		{`{"type":"send","id":"x","target":"greeter","content":"Dan","thread_id":"t"}`, true},
		{`{"type":"send","raw":"esc\"aped"}`, false},
		{`{"type":"subscribe","events":["output"]}`, false},
		{`{"Type":"send"}`, false},
		{`{"type":"send","id":1.5}`, false},
	} {
		var r wire.Request
		if got := fastRequest([]byte(tc.in), &r); got != tc.fast {
			t.Errorf("fastRequest(%q) = %v, want %v", tc.in, got, tc.fast)
		}
		if !tc.fast && !reflect.DeepEqual(r, wire.Request{}) {
			t.Errorf("fastRequest(%q) touched the request: %+v", tc.in, r)
		}
	}
}

func TestDecodeRequestAllocations(t *testing.T) {
	data := []byte(`{"type":"send","id":123,"raw":"@greeter Dan"}`)
	var r wire.Request
	n := testing.AllocsPerRun(100, func() { r, _ = decodeRequest(data) })
	// The id's bytes and the raw text (the type is one of requestTypes):
	// no reflection's garbage, and the request itself not on the heap.
	if n > 2 {
		t.Fatalf("decodeRequest of a send frame: %v allocations, want at most 2", n)
	}
	if r.Type != wire.TypeSend || r.Raw != "@greeter Dan" || string(r.ID) != "123" {
		t.Fatalf("decodeRequest of a send frame: %+v", r)
	}
}

// FuzzDecodeRequest checks that the reflection-free decoder and
// encoding/json agree on every input: the same success or failure, the same
// request.
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range requestSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fast, slow, fe, se := decodeBoth(data)
		if (fe == nil) != (se == nil) {
			t.Fatalf("%q: error %v, encoding/json %v", data, fe, se)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%q: decoded %+v, encoding/json %+v", data, fast, slow)
		}
	})
}

func BenchmarkDecodeRequest(b *testing.B) {
	data := []byte(`{"type":"send","id":123,"raw":"@greeter Dan"}`)
	for _, bc := range []struct {
		name   string
		decode func([]byte, *wire.Request) error
	}{
		{"fast", func(d []byte, r *wire.Request) (err error) { *r, err = decodeRequest(d); return err }},
		{"encoding-json", func(d []byte, r *wire.Request) error { return decodeJSON(d, r) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var r wire.Request
				if err := bc.decode(data, &r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
