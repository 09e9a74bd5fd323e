package xmlpipe

import (
	"fmt"
	"reflect"
	"sync"

	"github.com/xml-pipeline/xmlpipe/gen"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/codec"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/internal/lx"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/internal/payloadschema"
)

// PayloadType is a payload contract: a Go struct type, the XSD derived from it
// (or a fixed one), its compiled schema and its codec. It is immutable and safe
// for concurrent use; NewPayloadType caches one per Go type and schema.
type PayloadType struct {
	goType  reflect.Type
	model   *gen.Type
	codec   *codec.Codec
	xsd     []byte
	example []byte
	schema  *lx.Schema
	// canonical caches codec.Canonical.
	canonical bool
}

// PayloadOption customises NewPayloadType.
type PayloadOption func(*payloadOptions)

type payloadOptions struct {
	xsd []byte
}

// WithSchema uses a fixed schema instead of the one derived from the Go type
// (system, core and privileged vocabularies have hand-written schemas).
func WithSchema(xsd []byte) PayloadOption {
	return func(o *payloadOptions) { o.xsd = xsd }
}

type payloadKey struct {
	t   reflect.Type
	xsd string
}

var payloadTypes sync.Map // payloadKey → *PayloadType

// derivedTypes maps a struct reflect.Type to its *PayloadType with the derived
// schema (the no-option case of payloadTypes, without allocating a key).
var derivedTypes sync.Map

// FixedPayload is implemented by a payload Go type whose contract is a fixed,
// hand-written schema rather than the one derived from its fields (the
// meta.xsd vocabulary, for instance). The pump asks a handler's output for
// its payload type through it, so the output is validated against the fixed
// schema on re-entry, like any message addressed to a listener of that type.
type FixedPayload interface {
	// PayloadType returns the type's payload contract (its fixed schema).
	PayloadType() (*PayloadType, error)
}

// PayloadTypeOf returns the payload type of T.
func PayloadTypeOf[T any](opts ...PayloadOption) (*PayloadType, error) {
	return NewPayloadType(reflect.TypeFor[T](), opts...)
}

// NewPayloadType derives (or takes) the schema of t, compiles it and builds the
// codec. Errors name the type and what is unsupported.
func NewPayloadType(t reflect.Type, opts ...PayloadOption) (*PayloadType, error) {
	var o payloadOptions
	for _, opt := range opts {
		opt(&o)
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if o.xsd == nil {
		// Fast path for the pump's per-message lookups: keying by the
		// reflect.Type alone does not allocate.
		if v, ok := derivedTypes.Load(t); ok {
			return v.(*PayloadType), nil
		}
	}
	key := payloadKey{t: t, xsd: string(o.xsd)}
	if v, ok := payloadTypes.Load(key); ok {
		return v.(*PayloadType), nil
	}
	c, err := codec.For(t)
	if err != nil {
		return nil, fmt.Errorf("xmlpipe: payload %v: %w", t, err)
	}
	model := c.Type()
	xsd := o.xsd
	if xsd == nil {
		xsd = gen.XSD(model)
	}
	s, errs := lx.CompileSchema(xsd, "mem:/schemas/payload/"+model.Name+".xsd")
	if s == nil {
		return nil, fmt.Errorf("xmlpipe: payload %v: schema does not compile: %w", t, errs)
	}
	pt := &PayloadType{goType: t, model: model, codec: c, xsd: xsd, example: gen.Example(model), schema: s,
		canonical: c.Canonical()}
	v, _ := payloadTypes.LoadOrStore(key, pt)
	if o.xsd == nil {
		derivedTypes.Store(t, v)
	}
	return v.(*PayloadType), nil
}

// Name returns the payload root element's local name.
func (pt *PayloadType) Name() string { return pt.model.Name }

// Namespace returns the payload root's namespace ("" for none).
func (pt *PayloadType) Namespace() string { return pt.model.Namespace }

// GoType returns the Go struct type.
func (pt *PayloadType) GoType() reflect.Type { return pt.goType }

// Model returns the gen model of the type.
func (pt *PayloadType) Model() *gen.Type { return pt.model }

// XSD returns the schema text.
func (pt *PayloadType) XSD() []byte { return pt.xsd }

// Example returns an example instance that validates against the schema.
func (pt *PayloadType) Example() []byte { return pt.example }

// Canonical reports whether AppendPayload's output inside stage.AppendEnvelope
// is already exclusive C14N (see codec.Codec.Canonical), which lets the pump
// read the envelopes it builds with stage.Ingress.ReadCanonical.
func (pt *PayloadType) Canonical() bool { return pt.canonical }

// Matches reports whether an element with this name and namespace is this
// payload's root.
func (pt *PayloadType) Matches(name, ns string) bool {
	return pt.model.Name == name && pt.model.Namespace == ns
}

// Decode decodes canonical payload bytes into a new *T. Its error is a
// *failure.Failure at failure.StageDecode.
func (pt *PayloadType) Decode(b []byte) (any, error) {
	v, err := pt.codec.Decode(b)
	if err != nil {
		return nil, fail(failure.StageDecode, failure.ErrDecode, failure.Diagnostic{Stage: failure.StageDecode, Msg: err.Error()})
	}
	return v, nil
}

// AppendPayload encodes v (a T or *T) as the payload element of an envelope
// (declaring xmlns="" for a no-namespace type). Its error is a
// *failure.Failure at failure.StageEncode.
func (pt *PayloadType) AppendPayload(dst []byte, v any) ([]byte, error) {
	out, err := pt.codec.Append(dst, v, true)
	if err != nil {
		return dst, fail(failure.StageEncode, failure.ErrEncode, failure.Diagnostic{Stage: failure.StageEncode, Msg: err.Error()})
	}
	return out, nil
}

// fail builds the *failure.Failure of a payload that does not encode or
// decode.
func fail(stage failure.Stage, err error, diags ...failure.Diagnostic) *failure.Failure {
	return &failure.Failure{Stage: stage, Err: err, Diagnostics: diags}
}

// init hands the stage engine (xmlpipe/stage) the compiled schema a
// PayloadType keeps to itself, so that it validates payloads in the parsed
// envelope without the schema being part of this package's API. It runs
// before any package that imports this one is initialised.
func init() {
	payloadschema.Of = func(pt any) *lx.Schema { return pt.(*PayloadType).schema }
}
