package organism

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"unicode"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/codec"
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

// PayloadText returns the text of a payload value whose text field (the
// one stage.TextField picks) carries all it holds — a ShoutedResponse's
// Message — and false for one that holds more (a Weather's City beside
// its TempC), which reads right only whole: see stage.PayloadText.
func PayloadText(v any) (string, bool) { return stage.PayloadText(v) }

// StructuredPayload recognises a structured payload in the text of an
// "@target text" line, the console's and the bus's /ws raw send alike: a
// JSON object ({…}, which must then be valid JSON) is returned as is, an
// XML element (<Name…) as a JSON string holding it — both the forms
// Message.Payload and POST /api/v1/inject take. Other text is plain text
// for the payload's text field (ok false, no error).
func StructuredPayload(text string) (payload json.RawMessage, ok bool, err error) {
	switch {
	case strings.HasPrefix(text, "{"):
		if err := codec.CheckJSONText([]byte(text)); err != nil {
			return nil, false, err
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal([]byte(text), &obj); err != nil {
			return nil, false, err
		}
		return json.RawMessage(text), true, nil
	case len(text) > 1 && text[0] == '<' && (text[1] == '_' || unicode.IsLetter(rune(text[1]))):
		b, err := json.Marshal(text)
		return b, err == nil, err
	}
	return nil, false, nil
}
