package config

import (
	"fmt"
	"net"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/xml-pipeline/xmlpipe/gen"
	"github.com/xml-pipeline/xmlpipe/registry"
)

// Profile is one profiles: entry, a security profile (seed 000 §8.4): the
// dispatch table of the threads that run under it, the network their
// handlers may reach and how long the journal keeps their messages. Users
// (xmlpipe users profile), gateways and listeners name profiles by their
// key in the profiles: mapping.
type Profile struct {
	// Description says what the profile is for (shown by xmlpipe users
	// and in the API).
	Description string `yaml:"description"`
	// Listeners are the only listeners a thread under the profile reaches:
	// listener names (compared without case) or globs ("files-*", "*").
	// The organism's own listeners (system.*, core.*) are always reached.
	// A listener outside the list does not exist for the profile's
	// threads: a message for it is refused as one for a listener that
	// does not exist, and no listing shows it.
	Listeners []string `yaml:"listeners"`
	// Network lists the addresses ("host:port"; host "*" or "*.domain"
	// allowed, port "*" allowed) the handlers of the profile's threads may
	// dial: fetch and web_search, MCP mounts reached over HTTP. Absent:
	// no restriction; [] : no network at all.
	Network NetworkList `yaml:"network"`
	// Retention is how long the journal keeps the messages of the threads
	// that run under the profile (retain_forever, prune_on_delivery,
	// retain_days(N) or window(D)); absent: journal.retention. The journal
	// records each entry's profile. Where a listener's own retention also
	// applies, the two combine so that an entry is pruned only when both
	// would prune it (the longer retention wins: nothing either asked to
	// keep is lost); a thread under an intersection of profiles ("a&b")
	// likewise keeps what any of them keeps. A pruned entry keeps its
	// metadata in the journal (pruned says why and when); only its bytes
	// go.
	Retention Retention `yaml:"retention"`
}

// NetworkList is a profile's network: allow-list. The zero value (key
// absent) restricts nothing; a written list, even empty, allows exactly
// its entries.
type NetworkList struct {
	// Set reports that the key was written.
	Set bool
	// Addrs are the entries, "host:port".
	Addrs []string
}

// UnmarshalYAML reads a list of strings.
func (n *NetworkList) UnmarshalYAML(node *yaml.Node) error {
	if node.Kind != yaml.SequenceNode {
		return fmt.Errorf("want a list of host:port entries, got %s", describe(node))
	}
	out := make([]string, 0, len(node.Content))
	for _, item := range node.Content {
		if item.Kind != yaml.ScalarNode {
			return fmt.Errorf("want host:port entries, got %s", describe(item))
		}
		out = append(out, item.Value)
	}
	*n = NetworkList{Set: true, Addrs: out}
	return nil
}

// MarshalYAML writes the list (nil when unset).
func (n NetworkList) MarshalYAML() (any, error) {
	if !n.Set {
		return nil, nil
	}
	return n.Addrs, nil
}

// Allowed returns the entries, nil when unset (no restriction) and a
// non-nil empty slice when set empty.
func (n NetworkList) Allowed() []string {
	if !n.Set {
		return nil
	}
	return append([]string{}, n.Addrs...)
}

// ProfileNames returns the names of the profiles, sorted.
func (o *Organism) ProfileNames() []string {
	names := make([]string, 0, len(o.Profiles))
	for n := range o.Profiles {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ProfileHint is " (did you mean "calc"?)" when name is not a profile of
// o but differs from one only in case, else "". Profile names are keys:
// lower-case, matched exactly, so "Calc" names no profile; the hint says
// which one was meant.
func (o *Organism) ProfileHint(name string) string {
	if _, ok := o.Profiles[name]; ok {
		return ""
	}
	for _, n := range o.ProfileNames() {
		if strings.EqualFold(n, name) {
			return fmt.Sprintf(" (did you mean %q?)", n)
		}
	}
	return ""
}

// Callable is a listener's callable: declaration (seed 000 §15.1): the
// listener offered to federated peers as one tool. The organism registers
// a listener named <name>.call taking the parameters as its payload; a
// call to it becomes the listener's task in a conversation of its own,
// under the caller's profile narrowed by requires, and the listener's
// answer returns as the call's answer.
type Callable struct {
	// Description is the tool's description, as peers see it. Required.
	Description string `yaml:"description"`
	// Parameters are the tool's arguments: the call payload's fields.
	Parameters []Parameter `yaml:"parameters"`
	// Requires lists the listeners the callee's work may reach (names or
	// globs): its own dispatch table, narrowed further by the profile of
	// the gateway a call arrives through (Host Sovereignty, §15.3).
	// The callee's conversation reaches the listener itself and these
	// (config.CallProfile); empty: the listener's messages reach nothing
	// but the organism's own listeners.
	Requires []string `yaml:"requires"`
	// Root is the call payload's root tag (default: the listener's name in
	// PascalCase followed by Call: research-agent → ResearchAgentCall).
	// Gateways export and import it.
	Root string `yaml:"root"`
	// Timeout bounds one call: the callee's whole conversation, every
	// turn, tool call and wait for a human of it (a number of seconds or
	// a Go duration). When it passes, the conversation is killed and the
	// caller gets a failed call saying so. The listener's own timeout
	// bounds each of its handler calls, never the call as a whole. 0 or
	// unset: DefaultCallTimeout, raised for an agent whose calls may wait
	// for a human to that wait and a turn more. Negative is refused.
	Timeout Duration `yaml:"timeout"`
}

// DefaultCallTimeout bounds a call of a callable listener that sets no
// callable.timeout: a conversation of several model turns and tool calls.
const DefaultCallTimeout = 30 * time.Minute

// IsZero reports whether no callable: was written.
func (c Callable) IsZero() bool {
	return c.Description == "" && len(c.Parameters) == 0 && len(c.Requires) == 0 && c.Root == "" && c.Timeout == 0
}

// Parameter is one argument of a callable.
type Parameter struct {
	// Name is the argument's name and its element's. Required.
	Name string `yaml:"name"`
	// Type is string (default), integer, double or boolean.
	Type string `yaml:"type"`
	// Required makes the argument mandatory.
	Required bool `yaml:"required"`
	// Description documents the argument.
	Description string `yaml:"description"`
	// Enum restricts a string argument to these values.
	Enum []string `yaml:"enum"`
}

// CallName is the name of the listener a callable listener is called
// through: its own name followed by ".call".
func CallName(listener string) string { return listener + ".call" }

// CallRoot is the root tag of l's callable payload: callable.root, else
// the listener's name in PascalCase followed by Call.
func (l Listener) CallRoot() string {
	if l.Callable.Root != "" {
		return l.Callable.Root
	}
	var b strings.Builder
	up := true
	for _, r := range l.Name {
		switch {
		case r >= 'a' && r <= 'z':
			if up {
				r -= 'a' - 'A'
			}
			b.WriteRune(r)
			up = false
		case r >= 'A' && r <= 'Z', r >= '0' && r <= '9' && b.Len() > 0:
			b.WriteRune(r)
			up = false
		default:
			up = true
		}
	}
	return b.String() + "Call"
}

// CallProfile is the name of the implicit profile of a callable
// listener's calls: the listener itself and its requires: list (never a
// name a profiles: entry can have).
func CallProfile(listener string) string { return "callable:" + strings.ToLower(listener) }

// checkProfiles reports malformed profiles and references to profiles
// that do not exist.
func (o *Organism) checkProfiles(r *reporter) {
	for _, name := range o.ProfileNames() {
		p := o.Profiles[name]
		at := childKey("profiles", name)
		checkRetention(r, at+".retention", p.Retention, true)
		if !registry.ValidProfileName(name) {
			r.add(at, "profile name %q: want lower-case letters, digits, '_', '.' or '-'", name)
		}
		for i, l := range p.Listeners {
			checkListenerPattern(r, childIndex(at+".listeners", i), l)
		}
		for i, a := range p.Network.Addrs {
			if err := checkNetworkEntry(a); err != nil {
				r.add(childIndex(at+".network", i), "%v", err)
			}
		}
	}
	ref := func(path, name string) {
		if name == "" {
			return
		}
		if _, ok := o.Profiles[name]; !ok && len(o.Profiles) == 0 {
			r.add(path, "no profile %q: this organism defines no profiles (a profiles: section is needed)", name)
		} else if !ok {
			r.add(path, "no profile %q%s (profiles: %s)", name, o.ProfileHint(name), strings.Join(o.ProfileNames(), ", "))
		}
	}
	for i, l := range o.Listeners {
		path := childIndex("listeners", i)
		ref(path+".profile", l.Profile)
		if !l.Callable.IsZero() {
			o.checkCallable(r, path+".callable", l)
		}
	}
	for i, g := range o.Gateways {
		ref(childIndex("gateways", i)+".profile", g.Profile)
	}
}

// checkListenerPattern reports an empty or malformed listener name or glob.
func checkListenerPattern(r *reporter, path, l string) {
	if strings.TrimSpace(l) == "" {
		r.add(path, "empty listener name")
		return
	}
	if _, err := pathMatch(l); err != nil {
		r.add(path, "listener pattern %q is malformed: %v", l, err)
	}
}

// pathMatch checks a glob.
func pathMatch(pattern string) (bool, error) { return path.Match(strings.ToLower(pattern), "") }

// checkNetworkEntry checks "host:port" (the pump parses it fully).
func checkNetworkEntry(a string) error {
	host, port, err := net.SplitHostPort(strings.TrimSpace(a))
	if err != nil || host == "" {
		return fmt.Errorf("want host:port, got %q", a)
	}
	if port != "*" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
			return fmt.Errorf("%q: want a port number (1-65535) or *", a)
		}
	}
	if strings.Contains(host[1:], "*") || strings.HasPrefix(host, "*") && host != "*" && !strings.HasPrefix(host, "*.") {
		return fmt.Errorf("%q: a wildcard host is * or *.domain", a)
	}
	return nil
}

// checkCallable reports a malformed callable: declaration.
func (o *Organism) checkCallable(r *reporter, path string, l Listener) {
	c := l.Callable
	if l.Type == MCPListener {
		r.add(path, "an MCP mount is not callable (declare callable: on a listener of its own)")
	}
	if strings.TrimSpace(c.Description) == "" {
		r.missing(path, "description")
	}
	if !registry.ValidProfileTerm(CallProfile(l.Name)) {
		r.add(path, "a callable listener's name must not hold '&' or white space, got %q", l.Name)
	}
	if c.Timeout < 0 {
		r.add(path+".timeout", "must not be negative, got %s (0 or unset: the default, %s)", c.Timeout,
			Duration(DefaultCallTimeout))
	}
	if root := l.CallRoot(); !gen.IsNCName(root) {
		r.add(path+".root", "%q is not a payload root tag (an XML name without a prefix)", root)
	}
	seen := map[string]bool{}
	for i, p := range c.Parameters {
		at := childIndex(path+".parameters", i)
		switch {
		case p.Name == "":
			r.missing(at, "name")
		case !gen.IsNCName(p.Name):
			r.add(at+".name", "%q is not an XML element name", p.Name)
		case seen[p.Name]:
			r.add(at+".name", "%q is listed twice", p.Name)
		}
		seen[p.Name] = true
		if p.Type != "" && !slices.Contains(FieldTypes, p.Type) {
			r.add(at+".type", "unknown type %q (want %s)", p.Type, strings.Join(FieldTypes, ", "))
		}
	}
	for i, req := range c.Requires {
		checkListenerPattern(r, childIndex(path+".requires", i), req)
	}
	if _, clash := o.Listener(CallName(l.Name)); clash {
		r.add(path, "listener %q is also declared: a callable listener is called through it", CallName(l.Name))
	}
}
