package llm

import (
	"encoding/xml"
	"fmt"
	"reflect"
	"strings"
	"unicode"

	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// Answer is an agent's plain-text answer to a caller outside the organism (or
// to a listener whose payload has no text field).
type Answer struct {
	XMLName xml.Name `xml:"AgentAnswer"`
	Text    string   `doc:"the agent's answer"`
}

// InputTag returns the root tag of a YAML agent's text payload: the agent's
// name in PascalCase followed by "Task" (poet → PoetTask, code-reviewer →
// CodeReviewerTask).
func InputTag(agent string) string {
	var b strings.Builder
	up := true
	for _, r := range agent {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			up = true
			continue
		}
		if up {
			r = unicode.ToUpper(r)
			up = false
		}
		b.WriteRune(r)
	}
	s := b.String()
	if s == "" || !unicode.IsLetter([]rune(s)[0]) {
		s = "Agent" + s
	}
	return s + "Task"
}

// InputType returns the payload type of a YAML agent: one Text field under a
// root tag unique to the agent (InputTag), so `@poet write about rain` works
// from the console and blind self-iteration by root tag reaches only itself.
func InputType(agent string) (*xmlpipe.PayloadType, error) {
	t := reflect.StructOf([]reflect.StructField{
		{Name: "XMLName", Type: reflect.TypeFor[xml.Name](), Tag: reflect.StructTag(fmt.Sprintf(`xml:%q`, InputTag(agent)))},
		{Name: "Text", Type: reflect.TypeFor[string](), Tag: `doc:"what to ask the agent"`},
	})
	pt, err := xmlpipe.NewPayloadType(t)
	if err != nil {
		return nil, fmt.Errorf("llm: payload type of agent %s: %w", agent, err)
	}
	return pt, nil
}

// textPayload builds a value of type t carrying text in its text field: its
// only string field, else one named Message, Text or Name.
func textPayload(t reflect.Type, text string) (any, bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil, false
	}
	var strs []reflect.StructField
	for i := range t.NumField() {
		f := t.Field(i)
		if f.IsExported() && !f.Anonymous && f.Name != "XMLName" && f.Type.Kind() == reflect.String {
			strs = append(strs, f)
		}
	}
	pick := -1
	if len(strs) == 1 {
		pick = 0
	}
	for _, name := range []string{"Message", "Text", "Name"} {
		for i, f := range strs {
			if pick < 0 && f.Name == name {
				pick = i
			}
		}
	}
	if pick < 0 {
		return nil, false
	}
	v := reflect.New(t)
	v.Elem().FieldByIndex(strs[pick].Index).SetString(text)
	return v.Interface(), true
}

// selfAnswerMark starts the text of an answer an agent gives itself when it
// answers on a self-iteration thread (U+2063, invisible separator).
const selfAnswerMark = "\u2063answer\u2063"

// payloadText returns the text field of a payload value (see textPayload).
func payloadText(v any) (string, bool) {
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return "", false
		}
		rv = rv.Elem()
	}
	if rv.Kind() != reflect.Struct {
		return "", false
	}
	for _, name := range []string{"Text", "Message"} {
		if f := rv.FieldByName(name); f.IsValid() && f.Kind() == reflect.String {
			return f.String(), true
		}
	}
	return "", false
}
