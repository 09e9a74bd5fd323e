package mcp

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/xml-pipeline/xmlpipe/listeners/wasm/wasmtest"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// outputOrganism serves the README's calc (a wasm listener declaring its
// response), echo, whose declared response has a field of every type, and
// the native calculate and run_command tools (catalog handlers declaring
// their results; run_command, with no allow-list, refuses every call).
const outputOrganism = `organism: {name: mcp-output}
listeners:
  - name: run_command
    payload_class: tools.RunCommand
    handler: tools.RunCommand
    description: Runs an allowed program without a shell
  - name: calculate
    payload_class: tools.Calculate
    handler: tools.Calculate
    description: Evaluates an arithmetic expression
  - name: calc
    type: wasm
    module: calc.wasm
    description: Adds, subtracts, multiplies and divides
    payload:
      root: Calc
      fields:
        - {name: A, type: double, doc: first operand}
        - {name: B, type: double, doc: second operand}
        - {name: Op, type: string, enum: [add, sub, mul, div]}
    response:
      root: CalcResult
      fields: [{name: Value, type: double}]
  - name: echo
    type: wasm
    module: echo.wasm
    description: Answers its payload
    payload: &sample
      root: Sample
      fields:
        - {name: Ratio, type: double}
        - {name: Count, type: integer}
        - {name: Done, type: boolean}
        - {name: Label, type: string}
        - {name: Note, type: string, optional: true}
    response: *sample
`

// refusedRm is run_command's refusal of rm, which no allow-list names.
const refusedRm = `run_command: command not in the allow-list (tool_config.run_command.allowed_commands): "rm"`

// TestStructuredContentFitsTheOutputSchema: a tool whose listener declares
// its response advertises the response's JSON Schema as its outputSchema,
// and its structured content is typed to fit it (numbers, integers,
// booleans as JSON ones, not text), the text content kept — a refusal
// answered in the declared response (a tool error) too.
func TestStructuredContentFitsTheOutputSchema(t *testing.T) {
	dir := t.TempDir()
	guests := wasmtest.New(t.TempDir())
	for _, g := range []string{"calc", "echo"} {
		b, err := os.ReadFile(guests.Build(t, g, true))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, g+".wasm"), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "organism.yaml")
	if err := os.WriteFile(path, []byte(outputOrganism), 0o600); err != nil {
		t.Fatal(err)
	}
	o, err := organism.Load(path, organism.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	b := New(o.Pump, Options{Timeout: 60 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	st, ct := sdk.NewInMemoryTransports()
	ss, err := b.Server().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	serverDone := make(chan error, 1)
	go func() { serverDone <- ss.Wait() }()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test-client", Version: "v0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.Close()
		<-serverDone
		cancel()
		b.Close()
		if err := o.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	})

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	schemas := map[string]*jsonschema.Resolved{}
	for _, tool := range tools.Tools {
		if tool.OutputSchema == nil {
			continue
		}
		raw, err := json.Marshal(tool.OutputSchema)
		if err != nil {
			t.Fatal(err)
		}
		var s jsonschema.Schema
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatalf("%s: output schema %s: %v", tool.Name, raw, err)
		}
		if schemas[tool.Name], err = s.Resolve(nil); err != nil {
			t.Fatalf("%s: output schema %s: %v", tool.Name, raw, err)
		}
	}

	for _, tc := range []struct {
		tool       string
		args       map[string]any
		isError    bool
		text       string
		structured map[string]any
	}{
		{"calc", map[string]any{"A": 2, "B": 40, "Op": "add"}, false, "42", map[string]any{"Value": 42.0}},
		{"calculate", map[string]any{"Expression": "6*7"}, false,
			`<CalculateResult xmlns=""><Expression>6*7</Expression><Value>42</Value></CalculateResult>`,
			map[string]any{"Expression": "6*7", "Value": "42"}},
		{"echo", map[string]any{"Ratio": 0.5, "Count": 7, "Done": true, "Label": "x"}, false,
			`<Sample xmlns=""><Ratio>0.5</Ratio><Count>7</Count><Done>true</Done><Label>x</Label></Sample>`,
			map[string]any{"Ratio": 0.5, "Count": 7.0, "Done": true, "Label": "x"}},
		{"echo", map[string]any{"Ratio": 1, "Count": -3, "Done": false, "Label": "y", "Note": "n"}, false,
			`<Sample xmlns=""><Ratio>1</Ratio><Count>-3</Count><Done>false</Done><Label>y</Label><Note>n</Note></Sample>`,
			map[string]any{"Ratio": 1.0, "Count": -3.0, "Done": false, "Label": "y", "Note": "n"}},
		{"run_command", map[string]any{"Command": "rm"}, true, refusedRm,
			map[string]any{"Command": "rm", "ExitCode": -1.0, "Error": refusedRm}},
	} {
		r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tc.tool, Arguments: tc.args})
		if err != nil {
			t.Fatalf("%s: %v", tc.tool, err)
		}
		if r.IsError != tc.isError {
			t.Errorf("%s%v: IsError %v, want %v (%q)", tc.tool, tc.args, r.IsError, tc.isError, text(r))
			continue
		}
		if diff := cmp.Diff(tc.text, text(r)); diff != "" {
			t.Errorf("%s%v: text (-want +got):\n%s", tc.tool, tc.args, diff)
		}
		if diff := cmp.Diff(tc.structured, r.StructuredContent); diff != "" {
			t.Errorf("%s%v: structuredContent (-want +got):\n%s", tc.tool, tc.args, diff)
		}
		if schemas[tc.tool] == nil {
			t.Errorf("%s: no outputSchema advertised", tc.tool)
		} else if err := schemas[tc.tool].Validate(r.StructuredContent); err != nil {
			t.Errorf("%s%v: structuredContent %v does not fit the outputSchema: %v", tc.tool, tc.args, r.StructuredContent, err)
		}
	}
}
