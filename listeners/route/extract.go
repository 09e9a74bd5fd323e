package route

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/xml-pipeline/xmlpipe/gen"
)

// ExtractiveName is Filled.By of the extractive filler.
const ExtractiveName = "extractive"

// Extractive is the form filler used without a model: deterministic and
// small, for simple payloads. It fills the payload's top-level fields by
// these rules, then checks the result like any filler's (CheckPayload):
//
//   - an arithmetic field (named Expression, or documented as an
//     "expression") gets the arithmetic the need states, in words or
//     symbols (Arithmetic: "multiply six by seven" → 6*7);
//   - an enumerated field gets the one value the need names (a Files Op of
//     "read" for "read notes/todo.txt"; two values named, or none for a
//     required field, and it gives up);
//   - a URL field (URL in its name or doc) gets the need's first http(s)
//     URL; a path field (named Path, File, Dir…) the first word that looks
//     like a path (it holds a '/' or a file extension);
//   - an XML or JSON field (named so, or documented as an XML document or
//     a JSON value) gets the XML element or JSON object/array written in
//     the need;
//   - the need itself goes to the one text field left: a required string
//     field when no other string field is left, or the payload's only
//     field (a greeting's Name, a search's Query, an agent's text).
//
// Optional fields no rule fills stay absent. A required field no rule can
// fill makes it give up with an error naming the field: configure
// routing.fill_models for payloads it cannot read.
type Extractive struct{}

// Fill builds c's payload from need.
func (Extractive) Fill(_ context.Context, need string, c Capability) (Filled, error) {
	fail := func(err error) (Filled, error) {
		return Filled{}, &FillError{Capability: c.Name, Attempts: []Attempt{{By: ExtractiveName, Err: err}}}
	}
	if c.Payload == nil {
		return fail(fmt.Errorf("%s has no payload type", c.Name))
	}
	m := c.Payload.Model()
	values := map[string]any{}
	var textLeft []gen.Field
	for _, f := range m.Fields {
		if f.Repeated || f.Kind != gen.String || f.JSON {
			if !f.Optional && !f.Repeated {
				return fail(fmt.Errorf("cannot fill %s (%s) from words", f.JSONName(), kindName(f)))
			}
			continue
		}
		v, handled, err := extractField(need, f)
		switch {
		case err != nil && !f.Optional:
			return fail(fmt.Errorf("cannot fill %s: %w", f.JSONName(), err))
		case err != nil:
		case handled:
			values[f.JSONName()] = v
		default:
			textLeft = append(textLeft, f)
		}
	}
	if err := needField(need, m, textLeft, values); err != nil {
		return fail(err)
	}
	js, err := json.Marshal(values)
	if err != nil {
		return fail(err)
	}
	payload, err := CheckPayload(c, js)
	if err != nil {
		return fail(err)
	}
	return Filled{Payload: payload, JSON: js, By: ExtractiveName, Attempts: []Attempt{{By: ExtractiveName}}}, nil
}

// needField puts the need into the one text field left, as the rules say.
func needField(need string, m *gen.Type, left []gen.Field, values map[string]any) error {
	var required []gen.Field
	for _, f := range left {
		if !f.Optional {
			required = append(required, f)
		}
	}
	switch {
	case len(m.Fields) == 1 && len(left) == 1:
		values[left[0].JSONName()] = need
	case len(required) == 1 && len(left) == 1:
		values[required[0].JSONName()] = need
	case len(required) > 1 || len(required) == 1 && len(left) > 1:
		names := make([]string, len(left))
		for i, f := range left {
			names[i] = f.JSONName()
		}
		return fmt.Errorf("cannot tell which of %s the need fills", strings.Join(names, ", "))
	}
	return nil
}

// errNotFound: the need holds nothing for the field.
var errNotFound = errors.New("the need does not say")

// extractField applies the rules to one string field: handled reports that
// a rule applies (then err says when it found nothing).
func extractField(need string, f gen.Field) (v string, handled bool, err error) {
	name, doc := strings.ToLower(f.Name), strings.ToLower(f.Doc)
	switch {
	case len(f.Enum) > 0:
		v, err := enumIn(need, f.Enum)
		return v, true, err
	case name == "expression" || strings.Contains(doc, "expression") && !strings.Contains(doc, "xpath"):
		v, err := Arithmetic(need)
		return v, true, err
	case strings.Contains(name, "url") || strings.Contains(doc, "url"):
		v, err := urlIn(need)
		return v, true, err
	case name == "path" || name == "file" || name == "filename" || name == "dir" || name == "directory":
		v, err := pathIn(need)
		return v, true, err
	case name == "xml" || strings.Contains(doc, "xml document"):
		v, err := delimited(need, '<', '>', "an XML element")
		return v, true, err
	case name == "json" || strings.Contains(doc, "json value"):
		v, err := jsonIn(need)
		return v, true, err
	}
	return "", false, nil
}

// enumIn returns the one enumerated value the need names (as a word, or
// by its stem: "reading" names read). Words inside a URL or a path
// (https://host/delete, notes/delete-me.txt) name nothing.
func enumIn(need string, enum []string) (string, error) {
	ws := map[string]bool{}
	for _, chunk := range strings.Fields(need) {
		chunk = strings.TrimRight(strings.Trim(chunk, "\"'`<>()[],;"), ".?!:")
		if strings.ContainsAny(chunk, "/:.\\") {
			continue
		}
		for _, w := range words(chunk) {
			lw := strings.ToLower(w)
			ws[lw], ws[stem(lw)] = true, true
		}
	}
	var found []string
	for _, e := range enum {
		le := strings.ToLower(e)
		if ws[le] || ws[stem(le)] {
			found = append(found, e)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return "", fmt.Errorf("%w which of %s", errNotFound, strings.Join(enum, ", "))
	}
	return "", fmt.Errorf("the need names %s: which one?", strings.Join(found, " and "))
}

// urlIn returns the need's first http(s) URL.
func urlIn(need string) (string, error) {
	for _, w := range strings.Fields(need) {
		w = strings.Trim(w, `"'<>()[],;`)
		lw := strings.ToLower(w)
		if strings.HasPrefix(lw, "http://") || strings.HasPrefix(lw, "https://") {
			return strings.TrimRight(w, ".?!:"), nil
		}
	}
	return "", fmt.Errorf("%w: no http(s) URL", errNotFound)
}

// pathIn returns the first word that looks like a path: it holds a '/' or
// ends in a file extension (notes/todo.txt, report.md, /tmp).
func pathIn(need string) (string, error) {
	for _, w := range strings.Fields(need) {
		w = strings.TrimRight(strings.Trim(w, "\"'`<>()[],;"), ".?!:")
		if strings.HasPrefix(strings.ToLower(w), "http") {
			continue
		}
		if strings.Contains(w, "/") {
			return w, nil
		}
		if i := strings.LastIndexByte(w, '.'); i > 0 && i < len(w)-1 && len(w)-i <= 6 && asciiLetters(strings.ToLower(w[i+1:])) {
			return w, nil
		}
	}
	return "", fmt.Errorf("%w: no path (like notes/todo.txt)", errNotFound)
}

// delimited returns the need's text from the first open to the last close
// byte.
func delimited(need string, open, close byte, what string) (string, error) {
	i, j := strings.IndexByte(need, open), strings.LastIndexByte(need, close)
	if i < 0 || j <= i {
		return "", fmt.Errorf("%w: no %s", errNotFound, what)
	}
	return need[i : j+1], nil
}

// jsonIn returns the JSON object or array written in the need.
func jsonIn(need string) (string, error) {
	for _, d := range [...][2]byte{{'{', '}'}, {'[', ']'}} {
		if v, err := delimited(need, d[0], d[1], ""); err == nil && json.Valid([]byte(v)) {
			return v, nil
		}
	}
	return "", fmt.Errorf("%w: no JSON object or array", errNotFound)
}

// kindName names a field's kind for messages.
func kindName(f gen.Field) string {
	switch {
	case f.Repeated:
		return "a list"
	case f.Kind == gen.Struct:
		return "a nested element"
	case f.JSON:
		return "a JSON value"
	}
	return "a " + strings.TrimPrefix(f.Kind.XSDType(), "xs:")
}
