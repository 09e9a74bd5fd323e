package config

import (
	"strings"
	"testing"
)

func TestWasmListenerChecks(t *testing.T) {
	head := "organism: {name: t}\nlisteners:\n"
	tests := []struct{ yaml, want string }{
		{"  - {name: w, type: wasm, description: d}", "a wasm listener needs a module"},
		{"  - {name: w, type: wasm, module: m.wasm, description: d, payload: {root: '1x'}}", "payload.root: want an XML element name"},
		{"  - {name: w, type: wasm, module: m.wasm, description: d, payload: {root: R, fields: [{name: A, type: blob}]}}", `unknown field type "blob"`},
		{"  - {name: w, type: wasm, module: m.wasm, description: d, payload: {root: R, fields: [{name: A}, {name: A}]}}", `duplicate field "A"`},
		{"  - {name: w, type: wasm, module: m.wasm, description: d, payload: {root: R, fields: [{name: A, type: integer, enum: [x]}]}}", "only string fields take an enum"},
		{"  - {name: w, type: wasm, module: m.wasm, description: d, payload: {root: R, fields: [{name: Op, enum: ['a|b', c]}]}}", `t.yaml:3: listeners[0].payload.fields[0].enum: enum value "a|b" holds a '|'`},
		{"  - {name: w, type: wasm, module: m.wasm, description: d, xsd: a.xsd, payload: {root: R}}", "give xsd or payload, not both"},
		{"  - {name: w, type: wasm, module: m.wasm, description: d, capabilities: {memory_mb: -1}}", "memory_mb: must not be negative"},
		{"  - {name: w, type: wasm, module: m.wasm, description: d, capabilities: {memory_mb: 5000}}", "at most 4096"},
		{"  - {name: w, type: wasm, module: m.wasm, description: d, capabilities: {dir_writable: true}}", "set dir to mount a directory"},
		{"  - {name: w, type: wasm, module: m.wasm, description: d, capabilities: {dir: w, dir_writable: true, max_disk_bytes: -1}}",
			"t.yaml:3: listeners[0].capabilities.max_disk_bytes: must not be negative, got -1"},
		{"  - {name: w, type: wasm, module: m.wasm, description: d, capabilities: {dir: w, max_disk_bytes: 1048576}}",
			"t.yaml:3: listeners[0].capabilities.max_disk_bytes: caps a writable dir"},
		{"  - {name: g, payload_class: p, handler: h, description: d, capabilities: {timeout: 1s}}", "are for wasm listeners"},
		{"  - {name: w, type: wasm, module: m.wasm, description: d, capabilities: {nope: 1}}", "nope"},
		// The data directory (data beside the file by default): not the
		// guest's, nor anything inside it, nor anything containing it.
		{"  - {name: w, type: wasm, module: m.wasm, description: d, capabilities: {dir: data}}", "t.yaml:3: listeners[0].capabilities.dir: "},
		{"  - {name: w, type: wasm, module: m.wasm, description: d, capabilities: {dir: data}}", "overlaps organism.data_dir"},
		{"  - {name: w, type: wasm, module: m.wasm, description: d, capabilities: {dir: ./data/keys/}}", "overlaps organism.data_dir"},
		{"  - {name: w, type: wasm, module: m.wasm, description: d, capabilities: {dir: .}}", "overlaps organism.data_dir"},
		{"  - {name: w, type: wasm, module: m.wasm, description: d, capabilities: {dir: /}}", "overlaps organism.data_dir"},
	}
	for _, tc := range tests {
		_, err := Parse("t.yaml", []byte(head+tc.yaml+"\n"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s:\n err = %v\n want %q", tc.yaml, err, tc.want)
		}
	}
	o, err := Parse("/srv/organism.yaml", []byte(head+`  - name: calc
    type: wasm
    module: tools/calc.wasm
    description: a calculator
    payload: {root: Calc, fields: [{name: A, type: double, doc: first}, {name: Op, enum: [add, sub], optional: true}]}
    response: {root: CalcResult, fields: [{name: Value, type: double}]}
    capabilities: {memory_mb: 32, timeout: 2s, dir: data-wasm, dir_writable: true, max_disk_bytes: 1048576, env: [LANG],
      instances: 2, max_output_bytes: 4096}
`))
	if err != nil {
		t.Fatal(err)
	}
	l := o.Listeners[0]
	if l.Module != "/srv/tools/calc.wasm" || l.Capabilities.Dir != "/srv/data-wasm" || l.Capabilities.MaxDiskBytes != 1<<20 || l.Capabilities.Timeout.D().Seconds() != 2 ||
		len(l.Payload.Fields) != 2 || l.Payload.Fields[1].Enum[1] != "sub" || l.Response.Root != "CalcResult" {
		t.Fatalf("parsed: %+v", l)
	}
}

// TestWasmDirOutsideDataDir: a data_dir elsewhere frees data for the guest.
func TestWasmDirOutsideDataDir(t *testing.T) {
	_, err := Parse("/srv/organism.yaml", []byte(`organism: {name: t, data_dir: /var/lib/xmlpipe}
listeners:
  - {name: w, type: wasm, module: m.wasm, description: d, capabilities: {dir: data}}
  - {name: v, type: wasm, module: m.wasm, description: d, capabilities: {dir: /var/lib/xmlpipe-wasm}}
`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Parse("/srv/organism.yaml", []byte(`organism: {name: t, data_dir: /var/lib/xmlpipe}
listeners:
  - {name: w, type: wasm, module: m.wasm, description: d, capabilities: {dir: /var/lib}}
`))
	if err == nil || !strings.Contains(err.Error(), "organism.yaml:3:") || !strings.Contains(err.Error(), "overlaps organism.data_dir /var/lib/xmlpipe") {
		t.Fatalf("err = %v", err)
	}
}
