package catalog

import "sort"

// PayloadNames lists every name a payload_class may give — each payload's
// own and its aliases (the Python reference's names) — sorted: the
// candidates an unknown payload_class is told the nearest of.
func (c *Catalog) PayloadNames() []string {
	return c.accepted(func(name string) bool { _, ok := c.payloads[name]; return ok })
}

// HandlerNames lists every name a handler may give — each handler's own
// and its aliases — sorted.
func (c *Catalog) HandlerNames() []string {
	return c.accepted(func(name string) bool { _, ok := c.handlers[name]; return ok })
}

// accepted returns the payload, handler and alias names whose canonical
// name has holds, each once.
func (c *Catalog) accepted(has func(name string) bool) []string {
	var out []string
	seen := map[string]bool{}
	add := func(name string) {
		if !seen[name] && has(c.canonical(name)) {
			seen[name] = true
			out = append(out, name)
		}
	}
	for n := range c.payloads {
		add(n)
	}
	for n := range c.handlers {
		add(n)
	}
	for a := range c.aliases {
		add(a)
	}
	sort.Strings(out)
	return out
}
