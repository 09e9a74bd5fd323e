package organism

import (
	"fmt"
	"reflect"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// NewPayload builds a payload of struct type t (or *t) from a line of text:
// the text goes into the field stage.TextField picks, the other fields
// keep their zero values. It returns a pointer to the new struct, or an error wrapping
// ErrNoTextField.
func NewPayload(t reflect.Type, text string) (any, error) {
	v, ok := stage.NewTextPayload(t, text)
	if !ok {
		return nil, fmt.Errorf("%w: %v has no text field", ErrNoTextField, t)
	}
	return v, nil
}

// PayloadText returns the text a payload value carries in the field
// stage.TextField picks (a ShoutedResponse's Message), if it has one.
func PayloadText(v any) (string, bool) { return stage.PayloadText(v) }
