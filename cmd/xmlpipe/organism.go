package main

import (
	_ "embed"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/regfile"
)

// defaultOrganism is the hello-world organism, used when no organism.yaml is
// given and none is in the current directory.
//
//go:embed default-organism.yaml
var defaultOrganism []byte

const (
	// embeddedName names the embedded configuration in messages.
	embeddedName = "organism.yaml (embedded hello-world)"
)

// configSource is where an organism's configuration comes from: a file, or
// the embedded hello-world.
type configSource struct {
	path     string
	embedded bool
}

// defaultConfigPaths are looked up in the current directory, in order:
// ours, then the Python server's default (run_organism.py reads
// config/organism.yaml), so a user who ran it without arguments in their
// checkout gets their organism, not the embedded hello-world.
var defaultConfigPaths = []string{"organism.yaml", filepath.Join("config", "organism.yaml")}

// resolveConfig picks the configuration: the argument when given, else the
// first of defaultConfigPaths that exists, else the embedded hello-world.
func resolveConfig(pos []string) configSource {
	if len(pos) > 0 {
		return configSource{path: pos[0]}
	}
	for _, path := range defaultConfigPaths {
		if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
			return configSource{path: path}
		}
	}
	return configSource{path: embeddedName, embedded: true}
}

// build assembles the organism (not started), in memory. The embedded
// configuration takes .env from the current directory.
func (s configSource) build(opts organism.Options) (*organism.Organism, error) {
	cfg, err := s.load()
	if err != nil {
		return nil, err
	}
	return organism.New(cfg, opts)
}

// load reads the configuration (and its .env, the nearest walking up from
// the file: config.FindDotEnv). The file must be a regular
// one: it is read at the start (more than once: observability, then the
// build) and again at every reload, so a pipe or FIFO — which gave "empty
// configuration" on the second read, and blocked a reload until some
// writer came — is refused at once, naming what it is.
func (s configSource) load() (*config.Organism, error) {
	if s.embedded {
		if err := config.LoadDotEnv(".env"); err != nil {
			return nil, err
		}
		return config.Parse(embeddedName, defaultOrganism)
	}
	if err := config.LoadDotEnvFor(s.path); err != nil {
		return nil, err
	}
	data, err := regfile.Read(s.path)
	if err != nil {
		msg := err.Error()
		if pe, ok := errors.AsType[*fs.PathError](err); ok {
			msg = pe.Err.Error()
		}
		if errors.Is(err, regfile.ErrNotRegular) {
			msg += " (the configuration is read at the start and again at every reload)"
		}
		return nil, &config.Error{Pos: config.Position{File: s.path}, Msg: msg, Err: err}
	}
	return config.Parse(s.path, data)
}

// durableBuild returns a build function that assembles the organism on its
// data directory: data when given (--data), else organism.data_dir, with
// the gateways and listeners the OOB channel stored there.
func (s configSource) durableBuild(data string) func(organism.Options) (*organism.Organism, error) {
	return func(opts organism.Options) (*organism.Organism, error) {
		cfg, err := s.load()
		if err != nil {
			return nil, err
		}
		opts.DataDir = dataDir(cfg, data)
		log := opts.Logger
		if log == nil {
			log = slog.Default()
		}
		cfg.Gateways = append(cfg.Gateways, storedGateways(opts.DataDir, cfg, log)...)
		o, err := organism.New(cfg, opts)
		if err != nil {
			return nil, err
		}
		restoreListeners(o, opts.DataDir, log)
		return o, nil
	}
}

// dataDir is --data when given, else the configuration's data_dir.
func dataDir(cfg *config.Organism, flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	return cfg.Organism.DataDir
}
