package codec

import (
	"reflect"
	"slices"

	"github.com/xml-pipeline/xmlpipe/gen"
)

// structPlan is the precomputed encode/decode plan of one struct type.
type structPlan struct {
	typ   *gen.Type
	elems []*fieldPlan // child elements, declaration order
	attrs []*fieldPlan // attributes, declaration order
	// required counts the fields (elements and attributes) that must be present.
	required int
}

// fieldPlan is the plan of one field.
type fieldPlan struct {
	*gen.Field
	// slot numbers the field within its struct (attributes after elements),
	// used to track which fields a decoded element has seen.
	slot int
	// required is set for a singular, non-optional element or attribute (and for
	// a non-omitempty wrapper).
	required bool
	// sub is the plan of a nested struct.
	sub *structPlan
	// item is a path segment for error messages: Name or Wrapper/Name.
	segment string
}

// newPlan builds the plan of t and every struct it uses.
func newPlan(t *gen.Type) *structPlan {
	return buildPlan(t, map[*gen.Type]*structPlan{})
}

func buildPlan(t *gen.Type, done map[*gen.Type]*structPlan) *structPlan {
	if p, ok := done[t]; ok {
		return p
	}
	p := &structPlan{typ: t}
	done[t] = p
	for i := range t.Fields {
		f := &t.Fields[i]
		fp := &fieldPlan{Field: f, segment: f.Name}
		if f.Wrapper != "" {
			fp.segment = f.Wrapper
			fp.required = !f.Optional
		} else {
			fp.required = !f.Optional && !f.Repeated
		}
		if f.Struct != nil {
			fp.sub = buildPlan(f.Struct, done)
		}
		if fp.required {
			p.required++
		}
		if f.Attr {
			p.attrs = append(p.attrs, fp)
		} else {
			p.elems = append(p.elems, fp)
		}
	}
	for i, fp := range slices.Concat(p.elems, p.attrs) {
		fp.slot = i
	}
	return p
}

// elem returns the plan of the child element with the given local name (the
// wrapper name for wrapped fields), or nil.
func (p *structPlan) elem(local []byte) *fieldPlan {
	for _, fp := range p.elems {
		name := fp.Name
		if fp.Wrapper != "" {
			name = fp.Wrapper
		}
		if string(local) == name {
			return fp
		}
	}
	return nil
}

// attr returns the plan of the attribute with the given local name, or nil.
func (p *structPlan) attr(local []byte) *fieldPlan {
	for _, fp := range p.attrs {
		if string(local) == fp.Name {
			return fp
		}
	}
	return nil
}

// field returns the settable value of fp inside struct value v.
func (fp *fieldPlan) field(v reflect.Value) reflect.Value {
	if len(fp.Index) == 1 {
		return v.Field(fp.Index[0])
	}
	return v.FieldByIndex(fp.Index)
}
