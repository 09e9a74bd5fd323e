package codec

import (
	"fmt"
	"reflect"
	"sync"

	"github.com/xml-pipeline/xmlpipe/gen"
)

// Codec encodes and decodes one payload struct type. It is immutable and safe
// for concurrent use.
type Codec struct {
	typ  *gen.Type
	root *structPlan
}

// codecCache maps a struct reflect.Type to its *Codec.
var codecCache sync.Map

// For returns the (cached) codec of a payload struct type (a pointer to a
// struct is accepted). It fails with the gen.Describe error (wrapping
// gen.ErrUnsupported) when the type has no XML form.
func For(t reflect.Type) (*Codec, error) {
	if t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if c, ok := codecCache.Load(t); ok {
		return c.(*Codec), nil
	}
	gt, err := gen.Describe(t)
	if err != nil {
		return nil, fmt.Errorf("codec: %w", err)
	}
	c := &Codec{typ: gt, root: newPlan(gt)}
	actual, _ := codecCache.LoadOrStore(gt.GoType, c)
	return actual.(*Codec), nil
}

// Type returns the gen model the codec is driven by.
func (c *Codec) Type() *gen.Type { return c.typ }
