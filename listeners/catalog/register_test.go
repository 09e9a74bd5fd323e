package catalog_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/listeners/catalog"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// Reverse is the payload of the registered test listener.
type Reverse struct {
	Text string `doc:"the text to reverse"`
}

// Unsupported has a field the schema derivation refuses.
type Unsupported struct {
	C chan int
}

func reverse(_ context.Context, p *Reverse, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
	r := []rune(p.Text)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return xmlpipe.Respond(&Reverse{Text: string(r)}), nil
}

// A registered listener resolves like a built-in: its payload_class and
// handler by the one name, and the handler built is the function given.
func TestRegisterResolves(t *testing.T) {
	c := catalog.Builtin()
	if err := catalog.Register(c, "demo.Reverse", reverse); err != nil {
		t.Fatalf("Register: %v", err)
	}
	pt, err := c.PayloadType("demo.Reverse")
	if err != nil {
		t.Fatalf("PayloadType: %v", err)
	}
	if pt.Name() != "Reverse" {
		t.Errorf("root tag = %q, want Reverse", pt.Name())
	}
	h, err := c.Handler("demo.Reverse", pt, catalog.Env{})
	if err != nil {
		t.Fatalf("Handler: %v", err)
	}
	resp, err := h.Handle(t.Context(), &Reverse{Text: "abc"}, xmlpipe.Metadata{})
	if err != nil {
		t.Fatalf("Handle: %v", err)
	}
	r, ok := resp.(*xmlpipe.RespondResponse)
	if !ok || r.Payload.(*Reverse).Text != "cba" {
		t.Errorf("Handle = %#v, want a Respond of cba", resp)
	}
	// The built-ins are still there.
	if _, err := c.PayloadType("handlers.hello.Greeting"); err != nil {
		t.Errorf("built-in lost: %v", err)
	}
}

func TestRegisterRefuses(t *testing.T) {
	tests := []struct {
		name     string
		register func(*catalog.Catalog) error
		want     string
		is       error
	}{
		{"built-in name", func(c *catalog.Catalog) error { return catalog.Register(c, "hello.Greeting", reverse) },
			`"hello.Greeting"`, catalog.ErrDuplicate},
		{"python alias", func(c *catalog.Catalog) error {
			return catalog.Register(c, "handlers.hello.handle_greeting", reverse)
		}, "handle_greeting", catalog.ErrDuplicate},
		{"twice", func(c *catalog.Catalog) error {
			if err := catalog.Register(c, "demo.Reverse", reverse); err != nil {
				return err
			}
			return catalog.Register(c, "demo.Reverse", reverse)
		}, "demo.Reverse", catalog.ErrDuplicate},
		{"nil catalog", func(*catalog.Catalog) error { return catalog.Register(nil, "demo.Reverse", reverse) }, "nil catalog", nil},
		{"empty name", func(c *catalog.Catalog) error { return catalog.Register(c, " ", reverse) }, "empty name", nil},
		{"nil handler", func(c *catalog.Catalog) error { return catalog.Register[Reverse](c, "demo.Nil", nil) }, "nil handler", nil},
		{"unsupported field", func(c *catalog.Catalog) error {
			return catalog.Register(c, "demo.Bad", func(context.Context, *Unsupported, xmlpipe.Metadata) (xmlpipe.Response, error) {
				return nil, nil
			})
		}, "demo.Bad", nil},
		{"not a struct", func(c *catalog.Catalog) error {
			return catalog.RegisterHandler[string](c, "demo.String", xmlpipe.HandlerFunc(
				func(context.Context, any, xmlpipe.Metadata) (xmlpipe.Response, error) { return nil, nil }))
		}, "not a struct", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.register(catalog.Builtin())
			if err == nil || !strings.Contains(err.Error(), tt.want) || (tt.is != nil && !errors.Is(err, tt.is)) {
				t.Fatalf("error = %v, want one containing %q (is %v)", err, tt.want, tt.is)
			}
		})
	}
}
