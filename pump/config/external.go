package config

import (
	"slices"
	"strings"
)

// LoadWith is Load for a configuration used beside listeners given outside
// it — written in Go (organism.Options.Listeners) — whose names are in
// external: the configuration may name them wherever it names one of its
// own listeners (an agent's peers), and a name that is neither is told
// with file:line and the nearest of both as a did-you-mean.
func LoadWith(path string, external []string) (*Organism, error) {
	return load(path, external)
}

// ParseWith is Parse for a configuration used beside the listeners named
// in external (see LoadWith).
func ParseWith(name string, data []byte, external []string) (*Organism, error) {
	return parse(name, data, external)
}

// ValidateWith is Validate with the listeners named in external known
// besides the configuration's own (see LoadWith), and those it was loaded
// with (ParseWith).
func (o *Organism) ValidateWith(external []string) error {
	saved := o.external
	o.external = mergeNames(saved, external)
	defer func() { o.external = saved }()
	return o.Validate()
}

// External returns the names of the listeners given outside the
// configuration that it was loaded with (LoadWith, ParseWith).
func (o *Organism) External() []string { return slices.Clone(o.external) }

// namesExternal reports whether name is one of the listeners given outside
// the configuration (compared without case, as routing does).
func (o *Organism) namesExternal(name string) bool {
	return slices.ContainsFunc(o.external, func(n string) bool { return strings.EqualFold(n, name) })
}

// mergeNames returns a followed by the names of b not in it (without case).
func mergeNames(a, b []string) []string {
	out := slices.Clone(a)
	for _, n := range b {
		if !slices.ContainsFunc(out, func(m string) bool { return strings.EqualFold(m, n) }) {
			out = append(out, n)
		}
	}
	return out
}
