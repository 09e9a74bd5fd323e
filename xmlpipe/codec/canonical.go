package codec

import "strings"

// Canonical reports whether Append's output (with emptyNS, inside an
// envelope built by stage.AppendEnvelope) is already exclusive C14N, so a
// C14N pass over it would return the same bytes. That holds when the type has
// no attributes at any depth — C14N sorts attributes and escapes their values
// differently from Append (it keeps '>' literal, Append writes &gt;) — and the
// namespace URI needs no escaping. Element text is escaped exactly as C14N
// does (&amp; &lt; &gt; &#xD;), no element is written as an empty-element tag,
// and no whitespace is added. FuzzCanonical checks the claim.
func (c *Codec) Canonical() bool {
	if strings.ContainsAny(c.typ.Namespace, "<>&\"\t\n\r") {
		return false
	}
	return attrFree(c.root, map[*structPlan]bool{})
}

func attrFree(p *structPlan, seen map[*structPlan]bool) bool {
	if seen[p] {
		return true
	}
	seen[p] = true
	if len(p.attrs) > 0 {
		return false
	}
	for _, fp := range p.elems {
		if fp.sub != nil && !attrFree(fp.sub, seen) {
			return false
		}
	}
	return true
}
