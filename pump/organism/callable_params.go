package organism

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/xml-pipeline/xmlpipe/gen"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// ErrCallParameter is the error of a callable declaration whose parameters
// do not fit its listener's payload: every call would fail at the
// listener's schema, so the load refuses it.
var ErrCallParameter = errors.New("callable parameter does not fit its listener's payload")

// checkCallParams checks the parameters of callable listener lc against
// the payload of target, the listener lc built. A call of a listener that
// is not an agent becomes target's own payload with the arguments as its
// children (taskFor), so each parameter must name one of its simple child
// elements, with a type and values the element takes, and every element
// the payload requires must be a required parameter. An agent takes any
// parameters (they become its task's text). It returns the index of the
// offending parameter (-1 when the declaration as a whole is at fault)
// and the error, or -1 and nil.
func checkCallParams(target pump.Listener, lc config.Listener) (int, error) {
	if lc.Callable.IsZero() || target.Agent || target.Payload == nil || target.Payload.Model() == nil {
		return -1, nil
	}
	model := target.Payload.Model()
	root := target.Payload.Name()
	elems := map[string]gen.Field{}
	var names []string
	for _, f := range model.Fields {
		if f.Attr {
			if !f.Optional {
				return -1, fmt.Errorf("%w: %s requires the attribute %s, which a call (arguments are child elements) "+
					"cannot give", ErrCallParameter, root, f.Name)
			}
			continue
		}
		name := f.Name
		if f.Wrapper != "" {
			name = f.Wrapper
		}
		elems[name] = f
		names = append(names, name)
	}
	declared := map[string]config.Parameter{}
	for i, p := range lc.Callable.Parameters {
		declared[p.Name] = p
		f, ok := elems[p.Name]
		if !ok {
			return i, fmt.Errorf("%w: %s has no element %s%s (its elements: %s)", ErrCallParameter, root, p.Name,
				didYouMean(p.Name, names), strings.Join(names, ", "))
		}
		if err := fitsElement(p, f); err != nil {
			return i, fmt.Errorf("%w: %s of %s: %w", ErrCallParameter, p.Name, root, err)
		}
	}
	for _, name := range names {
		f := elems[name]
		if f.Optional || f.Repeated {
			continue
		}
		p, ok := declared[name]
		switch {
		case !ok:
			return -1, fmt.Errorf("%w: %s requires the element %s, which no parameter gives", ErrCallParameter, root, name)
		case !p.Required:
			return slices.IndexFunc(lc.Callable.Parameters, func(q config.Parameter) bool { return q.Name == name }),
				fmt.Errorf("%w: %s requires the element %s: the parameter must be required: true", ErrCallParameter, root, name)
		}
	}
	return -1, nil
}

// fitsElement reports why argument p can never be a value of element f,
// or nil when it can be.
func fitsElement(p config.Parameter, f gen.Field) error {
	if f.Wrapper != "" || f.Kind == gen.Struct {
		return errors.New("the element holds elements, not a value an argument gives")
	}
	typ := p.Type
	if typ == "" {
		typ = "string"
	}
	switch {
	case f.Kind == gen.Bool && (typ == "integer" || typ == "double"):
		return fmt.Errorf("the element is a boolean, the parameter of type %s", typ)
	case (f.Kind.IsInteger() || f.Kind.IsFloat()) && typ == "boolean":
		return fmt.Errorf("the element is a number (%s), the parameter a boolean", f.Kind.XSDType())
	case f.Kind.IsInteger() && typ == "double":
		return fmt.Errorf("the element is an integer (%s), the parameter a double", f.Kind.XSDType())
	}
	if len(f.Enum) > 0 {
		if len(p.Enum) == 0 {
			return fmt.Errorf("the element takes only %s: the parameter needs an enum of those values",
				strings.Join(f.Enum, ", "))
		}
		for _, v := range p.Enum {
			if !slices.Contains(f.Enum, v) {
				return fmt.Errorf("the parameter's enum value %q is not one the element takes (%s)", v,
					strings.Join(f.Enum, ", "))
			}
		}
	}
	return nil
}

// didYouMean is " (did you mean X?)" when X among names equals name but for
// case, else "".
func didYouMean(name string, names []string) string {
	for _, n := range names {
		if strings.EqualFold(n, name) {
			return fmt.Sprintf(" (did you mean %s?)", n)
		}
	}
	return ""
}

// callParamsError locates the error of checkCallParams in cfg: at the
// offending parameter of listeners[index] (or its parameters as a whole).
func callParamsError(cfg *config.Organism, index, param int, lc config.Listener, err error) error {
	path := fmt.Sprintf("listeners[%d].callable.parameters", index)
	if param >= 0 {
		path = fmt.Sprintf("%s[%d]", path, param)
	}
	return fmt.Errorf("%s: listener %s: %w", cfg.Pos(path), lc.Name, err)
}
