package main

import (
	"errors"
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/regfile"
)

// ctlSections are the top-level keys of an organism file that say where
// its OOB channel and owner key are: all ctl needs of it.
var ctlSections = map[string]bool{"organism": true, "oob": true}

// ctlConfig is the configuration ctl reaches the organism by: src, or —
// when src does not load (an edit the running organism refused to reload,
// and runs on without) — its organism: and oob: sections alone, with a
// warning naming why the whole file does not load. get-status, shutdown
// and the rest stay usable exactly when an operator needs them. A file
// whose organism: or oob: section is broken itself, or that is no YAML
// mapping, is refused with the whole file's error.
func ctlConfig(src configSource) (*config.Organism, string, error) {
	cfg, err := src.load()
	if err == nil || src.embedded {
		return cfg, "", err
	}
	var cerr *config.Error
	if !errors.As(err, &cerr) && !isJoined(err) {
		return nil, "", err // not a configuration problem (unreadable file)
	}
	data, rerr := regfile.Read(src.path)
	if rerr != nil {
		return nil, "", err
	}
	part, perr := ctlPart(data)
	if perr != nil {
		return nil, "", err
	}
	cfg, perr = config.Parse(src.path, part)
	if perr != nil {
		return nil, "", err
	}
	return cfg, fmt.Sprintf("%s does not load; reaching the organism with its organism: and oob: sections alone "+
		"(a running organism refuses to reload it too):\n%v", src.path, err), nil
}

// isJoined reports whether err joins several errors (config.Parse reports
// every problem of a file).
func isJoined(err error) bool {
	_, ok := err.(interface{ Unwrap() []error })
	return ok
}

// ctlPart is data, an organism file, reduced to its ctlSections.
func ctlPart(data []byte) (out []byte, err error) {
	defer func() {
		// Third-party parser fed a file that already failed to load.
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("invalid YAML: %v", r)
		}
	}()
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New("not a mapping")
	}
	root := doc.Content[0]
	kept := &yaml.Node{Kind: yaml.MappingNode}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if ctlSections[root.Content[i].Value] {
			kept.Content = append(kept.Content, root.Content[i], root.Content[i+1])
		}
	}
	if len(kept.Content) == 0 {
		return nil, errors.New("no organism: or oob: section")
	}
	return yaml.Marshal(kept)
}
