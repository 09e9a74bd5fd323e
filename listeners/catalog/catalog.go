// Package catalog maps the payload_class and handler names of organism.yaml to
// the compiled-in listeners. The Python reference's dotted names of the
// built-ins (handlers.hello.Greeting, handlers.hello.handle_greeting, …) are
// aliases, so a Python organism.yaml runs unchanged. A program embedding
// the organism adds its own listeners with Register.
package catalog

import (
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sort"
	"strings"

	"github.com/xml-pipeline/xmlpipe/gen"
	"github.com/xml-pipeline/xmlpipe/listeners/hello"
	"github.com/xml-pipeline/xmlpipe/listeners/tools"
	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// Lookup errors.
var (
	ErrUnknownPayload  = errors.New("unknown payload_class")
	ErrUnknownHandler  = errors.New("unknown handler")
	ErrPayloadMismatch = errors.New("handler does not take this payload_class")
)

// Env is what the host gives handlers that need services.
type Env struct {
	Logger *slog.Logger
	// LLM is the completion backend (nil: none configured).
	LLM hello.Completer
	// Todos is the todo registry; Lineage the thread registry's ancestry.
	Todos   *registry.TodoRegistry
	Lineage registry.Lineage
	// Print shows a listener's output to the user (console) — (thread,
	// sender, text); the thread is the handler's (Metadata.ThreadID).
	Print func(thread, from, text string)
	// Stream shows an LLM agent's text as the model writes it: each delta,
	// then end=true when the turn's reply is complete (nil: no streaming).
	Stream func(thread, agent, delta string, end bool)
	// Progress shows how far a long call of a listener has got (a mounted
	// MCP tool's progress notifications) to whoever waits for the
	// conversation of thread, as an agent's interim text (nil: none).
	Progress func(thread, listener, text string)
	// Tools gives native tools their tool_config for a caller (nil: every
	// tool's defaults).
	Tools tools.Policy
	// Callers tells tools which payload a caller takes, so their results
	// reach agents (whose input is text); nil: results in their own type.
	Callers tools.Callers
	// DataDir is the organism's data directory ("" = none: tools that
	// store data keep it in memory).
	DataDir string
	// AtShutdown registers a function the organism calls when it shuts
	// down (a tool closing its database); nil: the caller of Handler owns
	// nothing to close.
	AtShutdown func(func() error)
	// Stores are the stores the organism's tools share (the key_value
	// store of its data directory); nil: each listener opens its own.
	Stores *Stores
}

// HandlerFactory builds a handler for an environment.
type HandlerFactory func(Env) xmlpipe.Handler

// Payload is a catalog payload entry.
type Payload struct {
	// Name is the canonical name ("hello.Greeting").
	Name string
	// Type is the Go struct type.
	Type reflect.Type
	// Schema is a fixed schema (nil: derived from the type).
	Schema []byte
	// Listener and Description are the default listener of the type (for the
	// generated schemas/<listener>/ files).
	Listener, Description string
}

// Handler is a catalog handler entry.
type Handler struct {
	Name string
	// Takes is the payload type the handler accepts.
	Takes reflect.Type
	// Gives, when set, is the payload type the handler always answers its
	// caller with (a native tool's result): the listener's declared
	// response, advertised to MCP clients as the tool's output schema. Nil
	// for a handler that forwards, or answers in more than one type.
	Gives reflect.Type
	New   HandlerFactory
}

// Tool is a native tool: the listener an agent reaches by listing the tool
// in its tools:.
type Tool struct {
	// Name is the tool's name (in tools: and tool_config:, and the name of
	// the listener registered for it).
	Name string
	// PayloadClass and Handler name the tool's catalog entries.
	PayloadClass, Handler string
	// Description leads the tool's prompt.
	Description string
	// Check, when set, is the load-time check of a tool_config entry for
	// the tool (missing roots, a malformed allow-list…).
	Check func(tools.Config) error
}

// Catalog is the set of compiled-in payloads and handlers.
type Catalog struct {
	payloads map[string]*Payload
	handlers map[string]*Handler
	aliases  map[string]string
	tools    map[string]Tool
}

// New returns an empty catalog.
func New() *Catalog {
	return &Catalog{payloads: map[string]*Payload{}, handlers: map[string]*Handler{}, aliases: map[string]string{},
		tools: map[string]Tool{}}
}

// AddTool registers a native tool (its payload and handler are added
// separately).
func (c *Catalog) AddTool(t Tool) { c.tools[strings.ToLower(t.Name)] = t }

// Tool looks a native tool up by name (case-insensitively).
func (c *Catalog) Tool(name string) (Tool, bool) {
	t, ok := c.tools[strings.ToLower(strings.TrimSpace(name))]
	return t, ok
}

// ToolNames lists the native tools, sorted.
func (c *Catalog) ToolNames() []string {
	out := make([]string, 0, len(c.tools))
	for _, t := range c.tools {
		out = append(out, t.Name)
	}
	sort.Strings(out)
	return out
}

// AddPayload registers a payload under its name and aliases.
func (c *Catalog) AddPayload(p Payload, aliases ...string) {
	c.payloads[p.Name] = &p
	for _, a := range aliases {
		c.aliases[a] = p.Name
	}
}

// AddHandler registers a handler under its name and aliases.
func (c *Catalog) AddHandler(h Handler, aliases ...string) {
	c.handlers[h.Name] = &h
	for _, a := range aliases {
		c.aliases[a] = h.Name
	}
}

func (c *Catalog) canonical(name string) string {
	name = strings.TrimSpace(name)
	if n, ok := c.aliases[name]; ok {
		return n
	}
	// The reference's colon form "pkg.mod:attr" names the same thing.
	if n, ok := c.aliases[strings.Replace(name, ":", ".", 1)]; ok {
		return n
	}
	return name
}

// PayloadType resolves a payload_class to its compiled payload type.
func (c *Catalog) PayloadType(name string) (*xmlpipe.PayloadType, error) {
	if err := consoleError(name); err != nil {
		return nil, err
	}
	p, ok := c.payloads[c.canonical(name)]
	if !ok {
		return nil, fmt.Errorf("%w %q (known: %s)%s", ErrUnknownPayload, name, strings.Join(c.payloadNames(), ", "),
			pythonAdvice(name))
	}
	if p.Schema != nil {
		return xmlpipe.NewPayloadType(p.Type, xmlpipe.WithSchema(p.Schema))
	}
	return xmlpipe.NewPayloadType(p.Type)
}

// Handler resolves a handler name for a payload type and builds it.
func (c *Catalog) Handler(name string, pt *xmlpipe.PayloadType, env Env) (xmlpipe.Handler, error) {
	if err := consoleError(name); err != nil {
		return nil, err
	}
	h, ok := c.handlers[c.canonical(name)]
	if !ok {
		return nil, fmt.Errorf("%w %q (known: %s)%s", ErrUnknownHandler, name, strings.Join(c.handlerNames(), ", "),
			pythonAdvice(name))
	}
	if h.Takes != pt.GoType() {
		return nil, fmt.Errorf("%w: %s takes %v, not %v", ErrPayloadMismatch, name, h.Takes, pt.GoType())
	}
	return h.New(env), nil
}

// Response returns the payload type the handler name always answers with
// (Handler.Gives), nil when it declares none. A payload registered for
// that Go type lends it its fixed schema, if it has one.
func (c *Catalog) Response(name string) (*xmlpipe.PayloadType, error) {
	if err := consoleError(name); err != nil {
		return nil, err
	}
	h, ok := c.handlers[c.canonical(name)]
	if !ok {
		return nil, fmt.Errorf("%w %q (known: %s)%s", ErrUnknownHandler, name, strings.Join(c.handlerNames(), ", "),
			pythonAdvice(name))
	}
	if h.Gives == nil {
		return nil, nil
	}
	for _, p := range c.payloads {
		if p.Type == h.Gives && p.Schema != nil {
			return xmlpipe.NewPayloadType(p.Type, xmlpipe.WithSchema(p.Schema))
		}
	}
	return xmlpipe.NewPayloadType(h.Gives)
}

func (c *Catalog) payloadNames() []string {
	var out []string
	for n := range c.payloads {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func (c *Catalog) handlerNames() []string {
	var out []string
	for n := range c.handlers {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// GenEntries lists the payloads with a default listener, for the generated
// schemas/<listener>/ files (fixed-schema payloads are skipped).
func (c *Catalog) GenEntries() []gen.Entry {
	var out []gen.Entry
	for _, n := range c.payloadNames() {
		p := c.payloads[n]
		if p.Listener == "" || p.Schema != nil {
			continue
		}
		out = append(out, gen.Entry{Listener: p.Listener, Description: p.Description, Type: p.Type})
	}
	return out
}
