package meta

import "github.com/xml-pipeline/xmlpipe/xmlpipe"

// Capability is one registered listener as meta introspection describes it.
type Capability struct {
	// Name is the listener's registered name.
	Name string
	// Description is its one-line description.
	Description string
	// Payload is its payload contract.
	Payload *xmlpipe.PayloadType
}

// Catalog is the set of capabilities meta introspection may describe. The
// organism's own listeners (system.*, core.*) are not in it.
type Catalog interface {
	// Capabilities lists every capability in a stable order.
	Capabilities() []Capability
	// Capability finds one by its registered name.
	Capability(name string) (Capability, bool)
}

// CatalogFunc adapts a listing function to Catalog; Capability searches the
// listing by exact name.
type CatalogFunc func() []Capability

// Capabilities calls f.
func (f CatalogFunc) Capabilities() []Capability { return f() }

// Capability returns the capability of f's listing called name.
func (f CatalogFunc) Capability(name string) (Capability, bool) {
	for _, c := range f() {
		if c.Name == name {
			return c, true
		}
	}
	return Capability{}, false
}
