package catalog

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// ErrDuplicate reports a name the catalog already holds.
var ErrDuplicate = errors.New("catalog: name already registered")

// Register adds a listener written in Go to c: its payload type T and its
// handler, both under name, so that an organism.yaml entry names them as
// its payload_class and handler:
//
//	catalog.Register(c, "demo.Reverse", reverse) // func(ctx, *Reverse, xmlpipe.Metadata) (xmlpipe.Response, error)
//
//	listeners:
//	  - name: reverser
//	    payload_class: demo.Reverse
//	    handler: demo.Reverse
//	    description: Reverses text
//
// T must be a struct type the schema derivation supports (package gen);
// an unsupported one is refused here, naming the field. A name already
// registered (a built-in's included) is refused with ErrDuplicate. The same
// handler serves every listener entry naming it.
func Register[T any](c *Catalog, name string, handler func(ctx context.Context, p *T, md xmlpipe.Metadata) (xmlpipe.Response, error)) error {
	if handler == nil {
		return fmt.Errorf("catalog: register %q: nil handler", name)
	}
	return RegisterHandler[T](c, name, xmlpipe.Typed(handler))
}

// RegisterHandler is Register for a handler that is not a plain function:
// one implementing xmlpipe.ErrorHandler too (it then receives the <huh> and
// SystemError messages addressed to its listeners). The pump hands it
// payloads of type *T.
func RegisterHandler[T any](c *Catalog, name string, h xmlpipe.Handler) error {
	if c == nil {
		return errors.New("catalog: register: nil catalog (start from catalog.Builtin or catalog.New)")
	}
	name = strings.TrimSpace(name)
	if name == "" {
		return errors.New("catalog: register: empty name")
	}
	if h == nil {
		return fmt.Errorf("catalog: register %q: nil handler", name)
	}
	t := reflect.TypeFor[T]()
	if t.Kind() != reflect.Struct {
		return fmt.Errorf("catalog: register %q: payload type %v is not a struct", name, t)
	}
	if _, err := xmlpipe.NewPayloadType(t); err != nil {
		return fmt.Errorf("catalog: register %q: %w", name, err)
	}
	if c.taken(name) {
		return fmt.Errorf("%w: %q", ErrDuplicate, name)
	}
	c.AddPayload(Payload{Name: name, Type: t})
	c.AddHandler(Handler{Name: name, Takes: t, New: func(Env) xmlpipe.Handler { return h }})
	return nil
}

// taken reports whether name (or the alias it stands for) names a payload
// or a handler already.
func (c *Catalog) taken(name string) bool {
	if _, ok := c.aliases[name]; ok {
		return true
	}
	_, p := c.payloads[name]
	_, h := c.handlers[name]
	return p || h
}
