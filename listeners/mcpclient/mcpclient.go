// Package mcpclient mounts an external MCP server's tools as listeners
// (type: mcp in organism.yaml): each tool becomes a listener named
// <mount>.<tool> whose payload type is derived from the tool's JSON input
// schema, and whose handler calls the tool and answers the caller with a
// ToolResult.
package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"reflect"
	"sort"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/xml-pipeline/xmlpipe/gen"
	"github.com/xml-pipeline/xmlpipe/listeners/tools"
	"github.com/xml-pipeline/xmlpipe/listeners/wasm"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// DefaultTimeout bounds one tool call.
const DefaultTimeout = 30 * time.Second

// Errors.
var (
	ErrServer = errors.New("mcp: external server")
	ErrTool   = errors.New("mcp: tool call failed")
)

// ToolResult is what a mounted tool answers: its text content, or the
// error it reported.
type ToolResult struct {
	Tool  string
	Text  string `xml:",omitempty" doc:"the tool's text content"`
	Error string `xml:",omitempty" doc:"the error the tool reported, or why it could not be called"`
}

// Options name the external server.
type Options struct {
	// Name is the mount's name: tools become listeners <Name>.<tool>.
	Name string
	// Command starts a stdio server (argv); or URL is a streamable HTTP endpoint.
	Command []string
	URL     string
	// Env lists the host variables passed to Command (default none).
	Env []string
	// Timeout bounds one call (default 30s).
	Timeout time.Duration
	Logger  *slog.Logger
	// Callers lets a result reach a caller that takes another payload (an
	// agent takes text); nil: answer with ToolResult.
	Callers tools.Callers
}

// Tool is one mounted tool.
type Tool struct {
	// Listener is the listener name (<mount>.<tool>), also the payload root.
	Listener    string
	Description string
	Payload     *xmlpipe.PayloadType
	Handler     xmlpipe.Handler
}

// Mount is a connection to an external server and its tools.
type Mount struct {
	session *sdk.ClientSession
	tools   []Tool
}

// Connect starts or reaches the server, lists its tools and derives their
// payload types. Tools whose schema has no XML form are skipped (logged).
func Connect(ctx context.Context, o Options) (*Mount, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	var transport sdk.Transport
	switch {
	case len(o.Command) > 0:
		cmd := exec.Command(o.Command[0], o.Command[1:]...)
		cmd.Env = []string{}
		for _, k := range o.Env {
			if v, ok := os.LookupEnv(k); ok {
				cmd.Env = append(cmd.Env, k+"="+v)
			}
		}
		transport = &sdk.CommandTransport{Command: cmd}
	case o.URL != "":
		transport = &sdk.StreamableClientTransport{Endpoint: o.URL}
	default:
		return nil, fmt.Errorf("%w %s: give command or url", ErrServer, o.Name)
	}
	cctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	client := sdk.NewClient(&sdk.Implementation{Name: "xmlpipe", Version: "v1"}, nil)
	cs, err := client.Connect(cctx, transport, nil)
	if err != nil {
		return nil, fmt.Errorf("%w %s: connect: %w", ErrServer, o.Name, err)
	}
	m := &Mount{session: cs}
	for tool, err := range cs.Tools(cctx, nil) {
		if err != nil {
			return nil, errors.Join(fmt.Errorf("%w %s: list tools: %w", ErrServer, o.Name, err), cs.Close())
		}
		t, err := mountTool(cs, o, tool)
		if err != nil {
			o.Logger.Warn("mcp: tool not mounted", "server", o.Name, "tool", tool.Name, "error", err)
			continue
		}
		m.tools = append(m.tools, t)
	}
	return m, nil
}

// Tools returns the mounted tools.
func (m *Mount) Tools() []Tool { return m.tools }

// Close ends the session (and stops a command server).
func (m *Mount) Close() error { return m.session.Close() }

// param maps one schema property to a payload field.
type param struct {
	name string // the JSON property (= the element name)
	json bool   // an object or array, carried as JSON text
	kind string // the JSON type
	// optional: a zero value means "not given" (encoding cannot tell them apart)
	optional bool
}

func mountTool(cs *sdk.ClientSession, o Options, tool *sdk.Tool) (Tool, error) {
	listener := o.Name + "." + tool.Name
	if !gen.IsNCName(listener) {
		return Tool{}, fmt.Errorf("%q is not an XML name", listener)
	}
	var schema struct {
		Properties map[string]struct {
			Type        any    `json:"type"`
			Description string `json:"description"`
			Enum        []any  `json:"enum"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	raw, err := json.Marshal(tool.InputSchema)
	if err != nil {
		return Tool{}, err
	}
	if err := json.Unmarshal(raw, &schema); err != nil {
		return Tool{}, fmt.Errorf("input schema: %w", err)
	}
	names := make([]string, 0, len(schema.Properties))
	for n := range schema.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	required := map[string]bool{}
	for _, r := range schema.Required {
		required[r] = true
	}
	fields := wasm.Fields{Root: listener}
	var params []param
	for _, n := range names {
		p := schema.Properties[n]
		if !gen.IsNCName(n) {
			return Tool{}, fmt.Errorf("property %q is not an XML name", n)
		}
		kind, _ := p.Type.(string)
		f := wasm.Field{Name: n, Doc: p.Description, Optional: !required[n]}
		pr := param{name: n, kind: kind, optional: !required[n]}
		switch kind {
		case "integer":
			f.Type = "integer"
		case "number":
			f.Type = "double"
		case "boolean":
			f.Type = "boolean"
		case "string":
			f.Type = "string"
			for _, e := range p.Enum {
				if s, ok := e.(string); ok {
					f.Enum = append(f.Enum, s)
				}
			}
		default: // object, array, or several types: JSON text
			f.Type, pr.json = "string", true
			f.Doc = strings.TrimSpace(f.Doc + " (JSON)")
		}
		fields.Fields = append(fields.Fields, f)
		params = append(params, pr)
	}
	pt, err := fields.PayloadType(nil)
	if err != nil {
		return Tool{}, err
	}
	h := &handler{cs: cs, tool: tool.Name, params: params, timeout: o.Timeout, callers: o.Callers}
	return Tool{Listener: listener, Description: tool.Description, Payload: pt, Handler: h}, nil
}

type handler struct {
	cs      *sdk.ClientSession
	tool    string
	params  []param
	timeout time.Duration
	callers tools.Callers
}

// Handle calls the tool with the payload's fields as arguments.
func (h *handler) Handle(ctx context.Context, payload any, md xmlpipe.Metadata) (xmlpipe.Response, error) {
	res := &ToolResult{Tool: h.tool}
	args, err := h.arguments(payload)
	if err != nil {
		res.Error = err.Error()
		return tools.Answer(h.callers, md, res), nil
	}
	ctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	r, err := h.cs.CallTool(ctx, &sdk.CallToolParams{Name: h.tool, Arguments: args})
	if err != nil {
		res.Error = fmt.Sprintf("%v: %v", ErrTool, err)
		return tools.Answer(h.callers, md, res), nil
	}
	var parts []string
	for _, c := range r.Content {
		if t, ok := c.(*sdk.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	text := strings.Join(parts, "\n")
	if text == "" && r.StructuredContent != nil {
		b, _ := json.Marshal(r.StructuredContent)
		text = string(b)
	}
	if r.IsError {
		res.Error = text
	} else {
		res.Text = text
	}
	return tools.Answer(h.callers, md, res), nil
}

// arguments reads the decoded payload (a struct whose fields follow params).
func (h *handler) arguments(payload any) (map[string]any, error) {
	v := reflect.ValueOf(payload)
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct || v.NumField() != len(h.params)+1 {
		return nil, fmt.Errorf("mcp: unexpected payload %T", payload)
	}
	args := map[string]any{}
	for i, p := range h.params {
		f := v.Field(i + 1) // field 0 is XMLName
		if f.IsZero() && p.optional {
			continue // an optional field not given
		}
		if p.json {
			var x any
			if err := json.Unmarshal([]byte(f.String()), &x); err != nil {
				return nil, fmt.Errorf("mcp: %s is not JSON: %v", p.name, err)
			}
			args[p.name] = x
			continue
		}
		args[p.name] = f.Interface()
	}
	return args, nil
}
