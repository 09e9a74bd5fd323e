package main

import (
	_ "embed"
	"errors"
	"io/fs"
	"os"

	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// defaultOrganism is the hello-world organism, used when no organism.yaml is
// given and none is in the current directory.
//
//go:embed default-organism.yaml
var defaultOrganism []byte

const (
	// defaultConfigPath is looked up in the current directory.
	defaultConfigPath = "organism.yaml"
	// embeddedName names the embedded configuration in messages.
	embeddedName = "organism.yaml (embedded hello-world)"
)

// configSource is where an organism's configuration comes from: a file, or
// the embedded hello-world.
type configSource struct {
	path     string
	embedded bool
}

// resolveConfig picks the configuration: the argument when given, else
// ./organism.yaml when it exists, else the embedded hello-world.
func resolveConfig(pos []string) configSource {
	if len(pos) > 0 {
		return configSource{path: pos[0]}
	}
	if _, err := os.Stat(defaultConfigPath); errors.Is(err, fs.ErrNotExist) {
		return configSource{path: embeddedName, embedded: true}
	}
	return configSource{path: defaultConfigPath}
}

// build assembles the organism (not started). The embedded configuration
// takes .env from the current directory.
func (s configSource) build(opts organism.Options) (*organism.Organism, error) {
	if !s.embedded {
		return organism.Load(s.path, opts)
	}
	if err := config.LoadDotEnv(".env"); err != nil {
		return nil, err
	}
	cfg, err := config.Parse(embeddedName, defaultOrganism)
	if err != nil {
		return nil, err
	}
	return organism.New(cfg, opts)
}
