package config

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	llmconfig "github.com/xml-pipeline/xmlpipe/listeners/llm/config"
)

// Bounds that keep hostile documents (alias bombs, self-referencing
// anchors, absurd nesting) from exhausting the loader.
const (
	maxDepth = 64
	maxSteps = 1 << 18
)

// decoder maps a yaml.Node tree onto the configuration structs by their
// yaml tags, recording where every key was written and every problem found.
// Values not written keep what the target already holds (its defaults).
type decoder struct {
	file    string
	pos     map[string]Position
	errs    []*Error
	bad     map[string]bool
	steps   int
	aborted bool
}

func newDecoder(file string) *decoder {
	return &decoder{file: file, pos: map[string]Position{}, bad: map[string]bool{}}
}

// defaulter is implemented by list items that have defaults of their own
// (exported: the LLM listener's Backend is one).
type defaulter interface{ SetDefaults() }

// scalarForm is implemented by a mapping that may also be written as one
// scalar (routing.embeddings: tfidf); the mapping form decodes as any
// struct does (unknown keys reported, positions recorded).
type scalarForm interface{ decodeScalar(n *yaml.Node) error }

var (
	unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()
	defaulterType   = reflect.TypeFor[defaulter]()
	scalarFormType  = reflect.TypeFor[scalarForm]()
)

func (d *decoder) at(n *yaml.Node) Position {
	return Position{File: d.file, Line: n.Line, Col: n.Column}
}

// fail reports that the value at path could not be decoded; validation
// then stays silent about it.
func (d *decoder) fail(n *yaml.Node, path, format string, args ...any) {
	d.report(n, path, format, args...)
	d.bad[path] = true
}

// report records a problem found at node n, in the mapping or list at path.
func (d *decoder) report(n *yaml.Node, path, format string, args ...any) {
	d.errs = append(d.errs, &Error{Pos: d.at(n), Path: path, Msg: fmt.Sprintf(format, args...)})
}

// step counts visited nodes and resolves aliases; it returns nil when the
// node must not be decoded (budget exhausted, alias cycle, null value).
func (d *decoder) step(n *yaml.Node, path string, depth int) *yaml.Node {
	if d.aborted {
		return nil
	}
	d.steps++
	if d.steps > maxSteps {
		d.aborted = true
		d.fail(n, shortPath(path), "document too large (too many nodes or alias expansions)")
		return nil
	}
	for hops := 0; n.Kind == yaml.AliasNode; hops++ {
		if n.Alias == nil || hops > maxDepth {
			d.fail(n, path, "alias *%s cannot be resolved", n.Value)
			return nil
		}
		n = n.Alias
	}
	if depth > maxDepth {
		d.fail(n, shortPath(path), "nesting too deep (more than %d levels)", maxDepth)
		return nil
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return nil
	}
	return n
}

// shortPath abbreviates the paths of runaway nesting for messages.
func shortPath(path string) string {
	const keep = 48
	if len(path) <= keep {
		return path
	}
	cut := strings.LastIndexAny(path[:keep], ".[")
	if cut <= 0 {
		cut = keep
	}
	return path[:cut] + "..."
}

// decode writes node n into v, which must be addressable.
func (d *decoder) decode(n *yaml.Node, v reflect.Value, path string, depth int) {
	if n = d.step(n, path, depth); n == nil {
		return
	}
	if v.CanAddr() && v.Addr().Type().Implements(unmarshalerType) {
		if err := v.Addr().Interface().(yaml.Unmarshaler).UnmarshalYAML(n); err != nil {
			d.fail(n, path, "%s", err.Error())
		}
		return
	}
	if n.Kind == yaml.ScalarNode && v.CanAddr() && v.Addr().Type().Implements(scalarFormType) {
		if err := v.Addr().Interface().(scalarForm).decodeScalar(n); err != nil {
			d.fail(n, path, "%s", err.Error())
		}
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		d.decodeStruct(n, v, path, depth)
	case reflect.Slice:
		d.decodeSlice(n, v, path, depth)
	case reflect.Map:
		d.decodeMap(n, v, path, depth)
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			d.fail(n, path, "want a string, got %s", describe(n))
			return
		}
		v.SetString(n.Value)
	case reflect.Bool:
		b, ok := parseBool(n)
		if !ok {
			d.fail(n, path, "want a boolean, got %s", describe(n))
			return
		}
		v.SetBool(b)
	case reflect.Int:
		i, ok := parseInt(n)
		if !ok {
			d.fail(n, path, "want an integer, got %s", describe(n))
			return
		}
		v.SetInt(i)
	case reflect.Pointer: // an optional block or value: set when written
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		d.decode(n, v.Elem(), path, depth)
	case reflect.Interface:
		if x, ok := d.anyValue(n, path, depth); ok {
			v.Set(reflect.ValueOf(&x).Elem())
		}
	default:
		panic(fmt.Sprintf("config: no decoder for %s at %s", v.Type(), path))
	}
}

func (d *decoder) decodeStruct(n *yaml.Node, v reflect.Value, path string, depth int) {
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "want a mapping, got %s", describe(n))
		return
	}
	fields := fieldsOf(v.Type())
	for _, kv := range d.pairs(n, path, depth) {
		name := kv.key.Value
		i, ok := fields.index[name]
		if !ok {
			if h, ok := pythonCLIHint(path, name); ok {
				d.report(kv.key, path, "unknown key %q: %s", name, h)
				continue
			}
			d.report(kv.key, path, "unknown key %q%s", name, hint(name, fields.names))
			continue
		}
		child := childKey(path, name)
		d.pos[child] = d.at(kv.key)
		d.decode(kv.value, v.Field(i), child, depth+1)
	}
}

func (d *decoder) decodeSlice(n *yaml.Node, v reflect.Value, path string, depth int) {
	if n.Kind != yaml.SequenceNode {
		d.fail(n, path, "want a list, got %s", describe(n))
		return
	}
	out := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, item := range n.Content {
		child := childIndex(path, i)
		d.pos[child] = d.at(item)
		elem := out.Index(i)
		if elem.Addr().Type().Implements(defaulterType) {
			elem.Addr().Interface().(defaulter).SetDefaults()
		}
		d.decode(item, elem, child, depth+1)
	}
	v.Set(out)
}

func (d *decoder) decodeMap(n *yaml.Node, v reflect.Value, path string, depth int) {
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "want a mapping, got %s", describe(n))
		return
	}
	out := reflect.MakeMap(v.Type())
	for _, kv := range d.pairs(n, path, depth) {
		child := childKey(path, kv.key.Value)
		d.pos[child] = d.at(kv.key)
		elem := reflect.New(v.Type().Elem()).Elem()
		d.decode(kv.value, elem, child, depth+1)
		out.SetMapIndex(reflect.ValueOf(kv.key.Value).Convert(v.Type().Key()), elem)
	}
	v.Set(out)
}

// anyValue decodes free-form YAML (a listener's config:) into
// map[string]any, []any and scalars (string, int, float64, bool, nil,
// time.Time as yaml.v3 resolves them).
func (d *decoder) anyValue(n *yaml.Node, path string, depth int) (any, bool) {
	switch n.Kind {
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for _, kv := range d.pairs(n, path, depth) {
			child := childKey(path, kv.key.Value)
			d.pos[child] = d.at(kv.key)
			if c := d.step(kv.value, child, depth+1); c != nil {
				if x, ok := d.anyValue(c, child, depth+1); ok {
					m[kv.key.Value] = x
				}
			} else {
				m[kv.key.Value] = nil
			}
		}
		return m, true
	case yaml.SequenceNode:
		s := make([]any, 0, len(n.Content))
		for i, item := range n.Content {
			child := childIndex(path, i)
			var x any
			if c := d.step(item, child, depth+1); c != nil {
				x, _ = d.anyValue(c, child, depth+1)
			}
			s = append(s, x)
		}
		return s, true
	case yaml.ScalarNode:
		var x any
		if err := n.Decode(&x); err != nil {
			d.fail(n, path, "%s", strings.TrimPrefix(err.Error(), "yaml: "))
			return nil, false
		}
		return x, true
	}
	d.fail(n, path, "unexpected %s", describe(n))
	return nil, false
}

// pair is one key/value of a mapping.
type pair struct{ key, value *yaml.Node }

// pairs returns the entries of mapping n with merge keys ("<<") expanded;
// explicit keys override merged ones. Non-string and duplicate keys are
// reported and skipped.
func (d *decoder) pairs(n *yaml.Node, path string, depth int) []pair {
	var explicit, merged []pair
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			merged = append(merged, d.mergePairs(val, path, depth+1)...)
			continue
		}
		if k.Kind != yaml.ScalarNode {
			d.report(k, path, "keys must be strings, got %s", describe(k))
			continue
		}
		if first, dup := seen[k.Value]; dup {
			d.report(k, path, "duplicate key %q (first at line %d)", k.Value, first.Line)
			continue
		}
		seen[k.Value] = k
		explicit = append(explicit, pair{k, val})
	}
	for _, kv := range merged {
		if _, ok := seen[kv.key.Value]; !ok {
			seen[kv.key.Value] = kv.key
			explicit = append(explicit, kv)
		}
	}
	return explicit
}

// mergePairs expands the value of a "<<" key: a mapping or a list of them.
func (d *decoder) mergePairs(n *yaml.Node, path string, depth int) []pair {
	if n = d.step(n, path, depth); n == nil {
		return nil
	}
	switch n.Kind {
	case yaml.MappingNode:
		return d.pairs(n, path, depth)
	case yaml.SequenceNode:
		var out []pair
		seen := map[string]bool{}
		for _, item := range n.Content {
			if item = d.step(item, path, depth+1); item == nil {
				continue
			}
			if item.Kind != yaml.MappingNode {
				d.report(item, path, "a merge (<<) list must hold mappings, got %s", describe(item))
				continue
			}
			for _, kv := range d.pairs(item, path, depth+1) {
				if !seen[kv.key.Value] {
					seen[kv.key.Value] = true
					out = append(out, kv)
				}
			}
		}
		return out
	}
	d.report(n, path, "a merge (<<) value must be a mapping or a list of mappings, got %s", describe(n))
	return nil
}

// parseBool accepts YAML booleans and, for compatibility with the
// reference's PyYAML (YAML 1.1), plain yes/no/on/off in their three
// spellings.
func parseBool(n *yaml.Node) (bool, bool) {
	if n.Kind != yaml.ScalarNode {
		return false, false
	}
	switch n.ShortTag() {
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return false, false
		}
		return b, true
	case "!!str":
		if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
			return false, false
		}
		switch n.Value {
		case "yes", "Yes", "YES", "on", "On", "ON":
			return true, true
		case "no", "No", "NO", "off", "Off", "OFF":
			return false, true
		}
	}
	return false, false
}

// parseInt accepts YAML integers and floats with an integral value.
func parseInt(n *yaml.Node) (int64, bool) {
	if n.Kind != yaml.ScalarNode {
		return 0, false
	}
	switch n.ShortTag() {
	case "!!int":
		var i int64
		if err := n.Decode(&i); err != nil {
			return 0, false
		}
		return i, true
	case "!!float":
		var f float64
		if err := n.Decode(&f); err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			return 0, false
		}
		return int64(f), true
	}
	return 0, false
}

// describe renders a node for "got …" in messages (llmconfig.DescribeNode:
// the llm: settings decode their own durations and word them alike).
func describe(n *yaml.Node) string { return llmconfig.DescribeNode(n) }

// structFields indexes a struct type's fields by yaml key.
type structFields struct {
	index map[string]int
	names []string
}

var fieldCache sync.Map // reflect.Type → *structFields

func fieldsOf(t reflect.Type) *structFields {
	if f, ok := fieldCache.Load(t); ok {
		return f.(*structFields)
	}
	f := &structFields{index: map[string]int{}}
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
		if name == "" || name == "-" {
			continue
		}
		f.index[name] = i
		f.names = append(f.names, name)
	}
	fieldCache.Store(t, f)
	return f
}
