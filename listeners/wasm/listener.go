package wasm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/tetratelabs/wazero"

	"github.com/xml-pipeline/xmlpipe/xmlpipe"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/regfile"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// Options configure a WASM listener.
type Options struct {
	// Name is the listener's name (used in errors and as the guest's argv[0]).
	Name string
	// Module is the path of the .wasm file.
	Module string
	// Wasm, when set, is the module's bytes, already read by the caller
	// (who may have checked where they came from); Module then only names
	// the module in messages and is not read.
	Wasm []byte
	// Sandbox bounds the guest.
	Sandbox Sandbox
	// Payload is the input contract as a field list; else XSD (a schema
	// file), else PayloadType (a compiled-in payload_class), else the
	// module's describe export.
	Payload Fields
	// XSD is the path of a schema file for the payload.
	XSD string
	// PayloadType is a compiled-in payload type.
	PayloadType *xmlpipe.PayloadType
	// Response is the output contract: the guest's output must be this
	// element, and it is returned to the caller. Empty (and no describe
	// export giving one): the output is routed by its root tag.
	Response Fields
	// Cache is the compilation cache shared between modules (may be nil).
	Cache wazero.CompilationCache
	// Logger receives the listener's logs (default slog.Default()).
	Logger *slog.Logger
}

// Listener is a WASM module serving as a listener: its Handle feeds the
// payload to the guest and returns the guest's answer.
type Listener struct {
	mod      *Module
	payload  *xmlpipe.PayloadType
	response *xmlpipe.PayloadType
}

// Open reads and compiles the module and resolves its contract. An error
// about one of the options (the module file or its compilation, the
// sandbox's capabilities.dir or capabilities.memory_mb, the xsd, the
// payload or response contract) is an *OptionError naming it — not the
// listener, which the caller names.
func Open(ctx context.Context, o Options) (*Listener, error) {
	wasm := o.Wasm
	if wasm == nil {
		var err error
		if wasm, err = ReadModule(o.Module); err != nil {
			return nil, &OptionError{Key: "module", Err: err}
		}
	}
	mod, oe := compileModule(ctx, o.Name, wasm, o.Sandbox, o.Cache, o.Logger)
	if oe != nil {
		return nil, oe
	}
	l := &Listener{mod: mod}
	if err := l.resolve(ctx, o); err != nil {
		return nil, errors.Join(err, mod.Close(ctx))
	}
	return l, nil
}

// resolve builds the payload and response types.
func (l *Listener) resolve(ctx context.Context, o Options) error {
	var described *Contract
	describe := func() (*Contract, error) {
		if described != nil {
			return described, nil
		}
		out, ok, err := l.mod.Describe(ctx)
		if err != nil {
			return nil, &OptionError{Key: "module", Err: fmt.Errorf("describe: %w", err)}
		}
		c := Contract{}
		if ok {
			if c, err = ParseContract(out); err != nil {
				return nil, &OptionError{Key: "module", Err: fmt.Errorf("describe: %w", err)}
			}
		}
		described = &c
		return described, nil
	}
	var err error
	switch {
	case !o.Payload.IsZero():
		if l.payload, err = o.Payload.PayloadType(nil); err != nil {
			return &OptionError{Key: "payload", Err: err}
		}
	case o.XSD != "":
		var schema []byte
		if schema, err = regfile.Read(o.XSD); err != nil {
			return &OptionError{Key: "xsd", Err: err}
		}
		var f Fields
		if f, err = FieldsFromXSD(schema); err == nil {
			l.payload, err = f.PayloadType(schema)
		}
		if err != nil {
			return &OptionError{Key: "xsd", Err: err}
		}
	case o.PayloadType != nil:
		l.payload = o.PayloadType
	default:
		var c *Contract
		if c, err = describe(); err == nil {
			if c.Payload.IsZero() {
				return &OptionError{Key: "payload", Err: fmt.Errorf("%w: no payload contract: give payload or xsd, or export describe from the module", ErrContract)}
			}
			if l.payload, err = c.Payload.PayloadType(nil); err != nil {
				return &OptionError{Key: "module", Err: fmt.Errorf("describe: %w", err)}
			}
		}
	}
	if err != nil {
		return err
	}
	resp := o.Response
	if resp.IsZero() {
		c, err := describe()
		if err != nil {
			return err
		}
		resp = c.Response
	}
	if !resp.IsZero() {
		if l.response, err = resp.PayloadType(nil); err != nil {
			if o.Response.IsZero() { // its describe export's
				return &OptionError{Key: "module", Err: fmt.Errorf("describe: response: %w", err)}
			}
			return &OptionError{Key: "response", Err: err}
		}
	}
	return nil
}

// Payload returns the payload type the listener accepts.
func (l *Listener) Payload() *xmlpipe.PayloadType { return l.payload }

// Response returns the response type (nil: output is routed by root tag).
func (l *Listener) Response() *xmlpipe.PayloadType { return l.response }

// Module returns the compiled module.
func (l *Listener) Module() *Module { return l.mod }

// Handle implements xmlpipe.Handler: the payload goes to the guest, the
// guest's output comes back as the answer to the caller (Respond) when a
// response contract is declared, else as raw output routed by root tag.
func (l *Listener) Handle(ctx context.Context, payload any, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
	in, err := l.payload.AppendPayload(nil, payload)
	if err != nil {
		return nil, err
	}
	out, err := l.mod.Call(ctx, in)
	if err != nil {
		return nil, err
	}
	if l.response == nil {
		return xmlpipe.Raw(out), nil
	}
	v, err := l.decodeResponse(out)
	if err != nil {
		return nil, err
	}
	return xmlpipe.Respond(v), nil
}

// decodeResponse checks that out is exactly one well-formed response
// element, in UTF-8, and decodes it; its errors say what was expected and
// what came, for the guest's author.
func (l *Listener) decodeResponse(out []byte) (any, error) {
	if err := notUTF8(out, l.response.Name()); err != nil {
		return nil, err
	}
	parts, diags, err := stage.SplitRaw(out)
	switch {
	case err != nil:
		return nil, badOutput(err)
	case len(diags) > 0:
		return nil, fmt.Errorf("%w: not well-formed XML: %s", ErrBadOutput, diags[0].Msg)
	case len(parts) != 1:
		return nil, noOneElement(out, parts, l.response.Name())
	case !l.response.Matches(parts[0].Name, parts[0].Namespace):
		return nil, fmt.Errorf("%w: want <%s>, got <%s>", ErrBadOutput, l.response.Name(), parts[0].Name)
	}
	v, err := l.response.Decode(parts[0].Bytes)
	if err != nil {
		return nil, badOutput(err)
	}
	return v, nil
}

// badOutput is ErrBadOutput with the text of err, what the pump's stages
// found wrong with the guest's output. Only the text: err wraps their
// sentinels (failure.ErrDecode, …), which would tell the sender its own
// payload was invalid — the guest's output is at fault, the sender's
// <huh> says the message could not be processed.
func badOutput(err error) error {
	return fmt.Errorf("%w: %s", ErrBadOutput, err.Error())
}

// Close releases the module.
func (l *Listener) Close(ctx context.Context) error { return l.mod.Close(ctx) }
