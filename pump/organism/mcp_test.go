package organism

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

type addIn struct {
	A    int    `json:"a" jsonschema:"the first number"`
	B    int    `json:"b"`
	Note string `json:"note,omitempty"`
}

type addOut struct {
	Sum int `json:"sum"`
}

// externalServer is a small MCP server over streamable HTTP with an add and
// a failing tool.
func externalServer(t *testing.T) string {
	s := sdk.NewServer(&sdk.Implementation{Name: "external", Version: "v0"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "add", Description: "Adds two integers"},
		func(_ context.Context, _ *sdk.CallToolRequest, in addIn) (*sdk.CallToolResult, addOut, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprint(in.A + in.B)}}},
				addOut{Sum: in.A + in.B}, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "fail", Description: "Always fails"},
		func(_ context.Context, _ *sdk.CallToolRequest, in struct{}) (*sdk.CallToolResult, any, error) {
			return nil, nil, fmt.Errorf("the external tool broke")
		})
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestMCPListenerMountsExternalTools(t *testing.T) {
	url := externalServer(t)
	path := writeOrganism(t, `organism: {name: mcp-mount}
listeners:
  - name: ext
    type: mcp
    description: an external MCP server
    server: {url: `+url+`, timeout: 10s}
  - name: shouter
    payload_class: handlers.hello.GreetingResponse
    handler: handlers.hello.handle_shout
    description: shouts
    peers: [ext.add]
`)
	o, err := Load(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	defer o.Shutdown(context.Background())
	l, ok := o.Pump.Lookup("ext.add")
	if !ok {
		t.Fatal("ext.add not mounted")
	}
	if xsd := string(l.Payload.XSD()); !strings.Contains(xsd, `name="a" type="xs:long"`) || !strings.Contains(xsd, `name="note" type="xs:string" minOccurs="0"`) {
		t.Fatalf("derived schema:\n%s", xsd)
	}
	ask := func(to, body string) pump.Event {
		t.Helper()
		c := make(collector, 64)
		env := stage.AppendEnvelope(nil, "tester", to, stage.NewThreadID(), []byte(body))
		if _, err := o.Pump.InjectWait(context.Background(), env, c); err != nil {
			t.Fatal(err)
		}
		return c.await(t, pump.EventReply, pump.EventHuh)
	}
	e := ask("ext.add", `<ext.add xmlns=""><a>2</a><b>0</b></ext.add>`)
	if e.Kind != pump.EventReply || !strings.Contains(string(e.Envelope), "<Text>2</Text>") {
		t.Fatalf("add: %s %s", e.Kind, e.Envelope)
	}
	e = ask("ext.fail", `<ext.fail xmlns=""/>`)
	if e.Kind != pump.EventReply || !strings.Contains(string(e.Envelope), "<Error>the external tool broke</Error>") {
		t.Fatalf("fail: %s %s", e.Kind, e.Envelope)
	}
	// The schema gate holds for mounted tools too.
	env := stage.AppendEnvelope(nil, "tester", "ext.add", stage.NewThreadID(), []byte(`<ext.add xmlns=""><a>two</a><b>1</b></ext.add>`))
	if _, err := o.Pump.InjectWait(context.Background(), env, make(collector, 8)); !errors.Is(err, failure.ErrPayloadInvalid) {
		t.Fatalf("bad payload: err = %v", err)
	}
}

func TestMCPListenerUnreachable(t *testing.T) {
	path := writeOrganism(t, `organism: {name: mcp-down}
listeners:
  - name: ext
    type: mcp
    description: nobody there
    server: {url: "http://127.0.0.1:1/mcp", timeout: 2s}
`)
	if _, err := Load(path, Options{}); err == nil || !strings.Contains(err.Error(), "listener ext: mcp: external server ext: connect") {
		t.Fatalf("err = %v", err)
	}
}

// TestMCPMountHeldToProfileNetwork: a mounted tool called on a thread whose
// profile's network list leaves out the server's host:port answers with the
// refusal the fetch tool gives, and the server sees no call; a profile that
// lists it, and a thread without a profile, reach it.
func TestMCPMountHeldToProfileNetwork(t *testing.T) {
	var calls atomic.Int64
	s := sdk.NewServer(&sdk.Implementation{Name: "external", Version: "v0"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "add", Description: "Adds two integers"},
		func(_ context.Context, _ *sdk.CallToolRequest, in addIn) (*sdk.CallToolResult, addOut, error) {
			calls.Add(1)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprint(in.A + in.B)}}},
				addOut{Sum: in.A + in.B}, nil
		})
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "http://")
	path := writeOrganism(t, `organism: {name: mcp-profiles}
profiles:
  calc: {listeners: ["ext.*"], network: []}
  lan: {listeners: ["ext.*"], network: ["`+addr+`"]}
  open: {listeners: ["ext.*"]}
listeners:
  - name: ext
    type: mcp
    description: an external MCP server
    server: {url: `+srv.URL+`, timeout: 10s}
`)
	o, err := Load(path, quietOptions())
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	defer o.Shutdown(context.Background())
	for _, c := range []struct{ profile, want string }{
		{"calc", "<Error>mcp: network address not allowed by the thread's profile: " + addr + " (profile calc)</Error>"},
		{"lan", "<Text>5</Text>"},
		{"open", "<Text>5</Text>"},
		{"", "<Text>5</Text>"},
	} {
		before := calls.Load()
		col := make(collector, 64)
		env := stage.AppendEnvelope(nil, "tester", "ext.add", stage.NewThreadID(), []byte(`<ext.add xmlns=""><a>2</a><b>3</b></ext.add>`))
		if _, err := o.Pump.InjectWait(pump.WithProfile(context.Background(), c.profile), env, col); err != nil {
			t.Fatalf("%s: %v", c.profile, err)
		}
		e := col.await(t, pump.EventReply, pump.EventHuh)
		got := string(e.Envelope)
		if e.Kind != pump.EventReply || !strings.Contains(got, c.want) {
			t.Fatalf("profile %q: %s %s", c.profile, e.Kind, got)
		}
		if sent := calls.Load() - before; strings.Contains(c.want, "Error") != (sent == 0) {
			t.Fatalf("profile %q: the server saw %d calls", c.profile, sent)
		}
	}
}

// TestMCPMountToolsDifferingInCase: MCP tool names are case-sensitive,
// listener names are not. A server offering "add" and "Add" is mounted —
// the first of the two, the other skipped and logged — instead of the
// organism refusing to load over a duplicate listener name.
func TestMCPMountToolsDifferingInCase(t *testing.T) {
	s := sdk.NewServer(&sdk.Implementation{Name: "external", Version: "v0"}, nil)
	for _, name := range []string{"add", "Add"} {
		sdk.AddTool(s, &sdk.Tool{Name: name, Description: "Adds two integers (" + name + ")"},
			func(_ context.Context, _ *sdk.CallToolRequest, in addIn) (*sdk.CallToolResult, addOut, error) {
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprint(in.A + in.B)}}},
					addOut{Sum: in.A + in.B}, nil
			})
	}
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(srv.Close)
	path := writeOrganism(t, `organism: {name: mcp-case}
listeners:
  - name: ext
    type: mcp
    description: an external MCP server
    server: {url: `+srv.URL+`, timeout: 10s}
`)
	o, err := Load(path, Options{})
	if err != nil {
		t.Fatalf("a server with tools differing in case: %v", err)
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	defer o.Shutdown(context.Background())
	var mounted []string
	for _, l := range o.Pump.Listeners() {
		if strings.HasPrefix(strings.ToLower(l.Name), "ext.") {
			mounted = append(mounted, l.Name)
		}
	}
	if len(mounted) != 1 {
		t.Fatalf("mounted %v, want one of ext.add and ext.Add", mounted)
	}
	c := make(collector, 64)
	env := stage.AppendEnvelope(nil, "tester", mounted[0], stage.NewThreadID(),
		[]byte(`<`+mounted[0]+` xmlns=""><a>2</a><b>3</b></`+mounted[0]+`>`))
	if _, err := o.Pump.InjectWait(context.Background(), env, c); err != nil {
		t.Fatal(err)
	}
	if e := c.await(t, pump.EventReply, pump.EventHuh); e.Kind != pump.EventReply || !strings.Contains(string(e.Envelope), "<Text>5</Text>") {
		t.Fatalf("%s: %s %s", mounted[0], e.Kind, e.Envelope)
	}
}
