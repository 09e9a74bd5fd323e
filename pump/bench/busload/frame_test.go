package busload

import (
	"encoding/json"
	"testing"
)

// frameSeeds are server frames of every shape the load generator may read.
var frameSeeds = []string{
	`{"type":"sent","id":12,"thread_id":"0b6e2c1a-8a8a-4c5e-9d3f-2a1b3c4d5e6f","target":"greeter"}`,
	`{"type":"output","thread_id":"t","from":"shouter","text":"HELLO, DAN!","message_id":"ab12"}`,
	`{"type":"error","id":3,"error":"Unknown target: x","code":"unknown_target"}`,
	`{"type":"error","id":3,"error":"rejected","code":"rejected","diagnostics":["a","b"]}`,
	`{"type":"error","id":4,"error":"busy","code":"busy","retry_after":2}`,
	`{"type":"connected","username":"bench","role":"operator"}`,
	`{"type":"subscribed","events":["output"]}`,
	`{"type":"sent","id":"7"}`,
	`{"type":"sent","id":9223372036854775808}`,
	`{"type":"sent","id":-9223372036854775808}`,
	`{"type":"sent","id":1.0}`,
	`{"type":"output","text":"esc\"aped"}`,
	`{"type":"output","text":5}`,
	`{"Type":"output"}`,
	`{"type":"output","extra":null}`,
	`{"type":"output","id":1,"id":2}`,
	`{}`,
	`{`,
	`[]`,
	``,
}

func TestFastFrameMatchesJSON(t *testing.T) {
	for _, s := range frameSeeds {
		checkFrame(t, []byte(s))
	}
}

// checkFrame fails when fastFrame takes data and decodes it otherwise than
// json.Unmarshal.
func checkFrame(t *testing.T, data []byte) {
	t.Helper()
	f, ok := fastFrame(data)
	if !ok {
		return
	}
	var want Frame
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatalf("%q: fastFrame took it, json.Unmarshal refused it: %v", data, err)
	}
	if f != want {
		t.Fatalf("%q: fastFrame %+v, json.Unmarshal %+v", data, f, want)
	}
}

func TestFastFrameTakesSentAndOutput(t *testing.T) {
	for _, s := range frameSeeds[:3] {
		if _, ok := fastFrame([]byte(s)); !ok {
			t.Errorf("fastFrame(%q) fell back to encoding/json", s)
		}
	}
}

// FuzzFastFrame checks that the load generator's reflection-free frame
// decoder agrees with json.Unmarshal on every frame it takes.
func FuzzFastFrame(f *testing.F) {
	for _, s := range frameSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkFrame(t, data) })
}
