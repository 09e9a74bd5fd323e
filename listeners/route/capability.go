package route

import (
	"strings"

	"github.com/xml-pipeline/xmlpipe/gen"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// Capability is one listener as the router sees it: what the organism's
// routing table holds about it. The organism adapts its listeners into
// capabilities (this package knows nothing of the pump).
type Capability struct {
	// Name is the listener's name: the dispatch target.
	Name string
	// Description is the listener's one-line description.
	Description string
	// Payload is the listener's payload contract: its field names and doc
	// texts are indexed, and the form filler builds a payload of it.
	Payload *xmlpipe.PayloadType
}

// Source gives the capabilities to index. Version changes whenever the set
// changes (a listener added, removed or replaced): the router rebuilds its
// index when it sees a new version, so a reload or a listener registered
// over OOB is routable at the next request.
type Source interface {
	// Version identifies the current set of capabilities.
	Version() uint64
	// Capabilities returns the current set, in a stable order.
	Capabilities() []Capability
}

// Static is a fixed set of capabilities (version 0).
type Static []Capability

// Version returns 0: the set never changes.
func (Static) Version() uint64 { return 0 }

// Capabilities returns the set.
func (s Static) Capabilities() []Capability { return s }

// maxFieldDepth bounds how deep nested payload structs are indexed.
const maxFieldDepth = 3

// Document returns the text the index holds for c: its name (split at
// '_', '-' and '.'), its description, its payload's root element name, and
// each payload field's name, doc text and enumerated values (nested
// structs to a depth of three).
func Document(c Capability) string {
	var b strings.Builder
	b.WriteString(strings.NewReplacer("_", " ", "-", " ", ".", " ").Replace(c.Name))
	b.WriteString(". ")
	b.WriteString(c.Description)
	if c.Payload != nil {
		if m := c.Payload.Model(); m != nil {
			b.WriteString(". ")
			b.WriteString(m.Name)
			writeFields(&b, m, 0)
		}
	}
	return b.String()
}

func writeFields(b *strings.Builder, t *gen.Type, depth int) {
	if t == nil || depth >= maxFieldDepth {
		return
	}
	for _, f := range t.Fields {
		b.WriteString(". ")
		b.WriteString(f.Name)
		if f.Wrapper != "" {
			b.WriteString(" ")
			b.WriteString(f.Wrapper)
		}
		if f.Doc != "" {
			b.WriteString(": ")
			b.WriteString(f.Doc)
		}
		if len(f.Enum) > 0 {
			b.WriteString(" (")
			b.WriteString(strings.Join(f.Enum, ", "))
			b.WriteString(")")
		}
		writeFields(b, f.Struct, depth+1)
	}
}
