package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Load reads the configuration file at path, applies defaults, resolves
// relative paths against the file's directory and validates the result.
// Every problem is reported with file:line, all of them at once.
func Load(path string) (*Organism, error) {
	return LoadWith(path, nil)
}

// load is LoadWith.
func load(path string, external []string) (*Organism, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		msg := err.Error()
		if pe, ok := errors.AsType[*fs.PathError](err); ok {
			msg = pe.Err.Error()
		}
		return nil, &Error{Pos: Position{File: path}, Msg: msg, Err: err}
	}
	return parse(path, data, external)
}

// Parse is Load for a configuration already in memory; name is used in
// messages and its directory anchors relative paths.
func Parse(name string, data []byte) (*Organism, error) {
	return parse(name, data, nil)
}

// parse is ParseWith.
func parse(name string, data []byte, external []string) (*Organism, error) {
	root, err := parseDocument(name, data)
	if err != nil {
		return nil, err
	}
	o := Default()
	o.file = name
	o.external = mergeNames(nil, external)
	o.dir = filepath.Dir(name)
	if abs, err := filepath.Abs(o.dir); err == nil {
		o.dir = abs
	}
	d := newDecoder(name)
	d.pos[""] = d.at(root)
	d.decode(root, reflect.ValueOf(o).Elem(), "", 0)
	o.positions, o.bad = d.pos, d.bad
	o.normalize()
	if err := joinErrors(append(d.errs, o.problems()...)); err != nil {
		return nil, err
	}
	return o, nil
}

// emptyConfiguration is the error of a file with no YAML document (or a
// null one): the Python loader failed on it with an AttributeError.
const emptyConfiguration = "empty configuration (want a mapping with organism: {name: …} and listeners:, as the hello-world organism.yaml has)"

// parseDocument parses data into the root node of its single document,
// which must be a mapping.
func parseDocument(name string, data []byte) (root *yaml.Node, err error) {
	defer func() {
		// The YAML library is third-party code fed untrusted bytes: a panic
		// in it must not take the process down.
		if r := recover(); r != nil {
			root, err = nil, &Error{Pos: Position{File: name}, Msg: fmt.Sprintf("invalid YAML: parser failure: %v", r)}
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &Error{Pos: Position{File: name}, Msg: emptyConfiguration}
		}
		return nil, syntaxError(name, data, err)
	}
	if len(doc.Content) == 0 || (doc.Content[0].Kind == yaml.ScalarNode && doc.Content[0].ShortTag() == "!!null") {
		return nil, &Error{Pos: Position{File: name}, Msg: emptyConfiguration}
	}
	root = doc.Content[0]
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		return nil, &Error{Pos: Position{File: name, Line: next.Line, Col: next.Column}, Msg: "more than one YAML document (want exactly one)"}
	case !errors.Is(err, io.EOF):
		return nil, syntaxError(name, data, err)
	}
	if root.Kind != yaml.MappingNode {
		return nil, &Error{Pos: Position{File: name, Line: root.Line, Col: root.Column}, Msg: "configuration must be a mapping, got " + describe(root)}
	}
	return root, nil
}

// normalize canonicalises enum spellings, fills defaults that depend on
// other values and makes relative paths absolute.
func (o *Organism) normalize() {
	o.ThreadScheduling = Scheduling(normalizeEnum(string(o.ThreadScheduling)))
	o.LLM.Strategy = Strategy(normalizeEnum(string(o.LLM.Strategy)))
	for i := range o.LLM.Backends {
		b := &o.LLM.Backends[i]
		b.Provider = Provider(strings.ToLower(strings.TrimSpace(string(b.Provider))))
		if b.Name == "" {
			b.Name = string(b.Provider)
		}
		if b.BaseURL == "" {
			b.BaseURL = b.Provider.DefaultBaseURL()
		}
	}
	for i := range o.Listeners {
		l := &o.Listeners[i]
		l.Type = ListenerType(strings.ToLower(strings.TrimSpace(string(l.Type))))
		if l.Type == "" {
			l.Type = GoListener
		}
		l.Module, l.Script, l.XSD = o.resolve(l.Module), o.resolve(l.Script), o.resolve(l.XSD)
		l.Capabilities.Dir = o.resolve(l.Capabilities.Dir)
		for name, tc := range l.ToolConfig {
			for j, p := range tc.AllowedPaths {
				tc.AllowedPaths[j] = o.resolve(p)
			}
			l.ToolConfig[name] = tc
		}
	}
	for i := range o.Gateways {
		o.Gateways[i].TrustedIdentity = o.resolve(o.Gateways[i].TrustedIdentity)
	}
	for i, p := range o.Constitution {
		o.Constitution[i] = o.resolve(p)
	}
	o.Meta.AllowSchemaRequests = Access(normalizeEnum(string(o.Meta.AllowSchemaRequests)))
	o.Meta.AllowExampleRequests = Access(normalizeEnum(string(o.Meta.AllowExampleRequests)))
	o.Meta.AllowPromptRequests = Access(normalizeEnum(string(o.Meta.AllowPromptRequests)))
	o.Budgets.OnExceed = ExceedPolicy(normalizeEnum(string(o.Budgets.OnExceed)))
	s := &o.Organism
	s.DataDir, s.Identity = o.resolve(s.DataDir), o.resolve(s.Identity)
	s.TLS.Cert, s.TLS.Key = o.resolve(s.TLS.Cert), o.resolve(s.TLS.Key)
	o.OOB.UnixSocket = o.resolve(o.OOB.UnixSocket)
	o.OOB.TLS.Cert, o.OOB.TLS.Key = o.resolve(o.OOB.TLS.Cert), o.resolve(o.OOB.TLS.Key)
	o.normalizeBind()
	o.normalizeChainDepth()
	o.normalizeRouting()
	o.normalizeGovernedAgents()
	o.normalizeContextBuffer()
}

// normalizeBind makes oob.bind a bare host: brackets come off an IPv6
// address ("[::1]" → "::1"), and a port it names ("[::1]:9000",
// "localhost:9000") goes to oob.port unless oob.port was written as well
// (checkOOB then requires the two to agree).
func (o *Organism) normalizeBind() {
	b := strings.TrimSpace(o.OOB.Bind)
	host, port, err := net.SplitHostPort(b)
	if err != nil {
		if len(b) > 1 && b[0] == '[' && b[len(b)-1] == ']' {
			b = b[1 : len(b)-1]
		}
		o.OOB.Bind = b
		return
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		o.bindPort = -1 // bind stays as written, for the error
		return
	}
	o.OOB.Bind, o.bindPort = host, n
	if _, written := o.positions["oob.port"]; !written {
		o.OOB.Port = n
	}
}

// resolve makes a relative path absolute against the configuration's
// directory; "" stays "". A leading "~" or "~/" is the user's home
// directory, as a shell would read it (the Python server kept its files
// under ~/.xml-pipeline and ~/.agent_server); "~user/…" and "./~" are
// paths relative to the directory like any other.
func (o *Organism) resolve(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, p[1:])
		}
	}
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	abs := filepath.Join(o.dir, p)
	if o.written == nil {
		o.written = map[string]string{}
	}
	o.written[abs] = p
	return abs
}

// File returns the name the configuration was loaded under ("" when it was
// built in code).
func (o *Organism) File() string { return o.file }

// Dir returns the absolute directory relative paths were resolved against
// ("" when the configuration was built in code).
func (o *Organism) Dir() string { return o.dir }
