package main

import (
	"context"
	"crypto/ed25519"
	"fmt"

	"github.com/xml-pipeline/xmlpipe/oob/keys"
)

// keysUsage lists the keys subcommands.
const keysUsage = `usage: xmlpipe keys <command> [--data DIR] [--config organism.yaml]
  init           create the organism's Ed25519 identity and the owner's key pair (kept when present)
  show           print the public keys and their SHA-256 fingerprints
  export FILE    write the organism's public identity (a federation peer's trusted_identity)`

// keysCommands are the subcommands of `xmlpipe keys`.
var keysCommands = map[string]func(keys.Paths, []string, streams) int{
	"init":   runKeysInit,
	"show":   runKeysShow,
	"export": runKeysExport,
}

// runKeys is `xmlpipe keys init|show|export …`.
func runKeys(_ context.Context, args []string, std streams) int {
	if len(args) > 0 && isHelpArg(args[0]) {
		fmt.Fprintln(std.out, keysUsage)
		return exitOK
	}
	if len(args) == 0 || keysCommands[args[0]] == nil {
		return subcommandUsage(std, "keys", keysUsage, commandNames(keysCommands), args)
	}
	name := args[0]
	npos := 0
	argsUsage := "[--data DIR] [--config organism.yaml]"
	if name == "export" {
		npos = 1
		argsUsage = "FILE " + argsUsage
	}
	fs := newFlags("keys "+name, argsUsage, std.err)
	data := dataFlag(fs)
	orgFile := configFlag(fs, "organism.yaml giving data_dir and identity (default: ./organism.yaml, ./config/organism.yaml or the embedded hello-world)")
	pos, code, ok := parseFlags(fs, args[1:])
	if !ok {
		return code
	}
	if !wantArgs(fs, pos, npos, npos) {
		return exitUsage
	}
	p, err := keyPaths(*data, *orgFile)
	if err != nil {
		fmt.Fprintf(std.err, "xmlpipe keys %s: %v\n", name, err)
		return exitFailure
	}
	return keysCommands[name](p, pos, std)
}

// keyPaths are the key files: in --data (else organism.data_dir), the
// organism's identity at organism.identity when set.
func keyPaths(data, orgFile string) (keys.Paths, error) {
	var pos []string
	if orgFile != "" {
		pos = []string{orgFile}
	}
	cfg, err := resolveConfig(pos).load()
	if err != nil {
		if data != "" && orgFile == "" {
			return keys.PathsFor(data, ""), nil // the data directory alone is enough
		}
		return keys.Paths{}, err
	}
	return keys.PathsFor(dataDir(cfg, data), cfg.Organism.Identity), nil
}

func runKeysInit(p keys.Paths, _ []string, std streams) int {
	created, err := keys.Init(p)
	for _, f := range created {
		fmt.Fprintf(std.out, "created %s\n", f)
	}
	if err != nil {
		fmt.Fprintf(std.err, "xmlpipe keys init: %v\n", err)
		return exitFailure
	}
	if len(created) == 0 {
		fmt.Fprintln(std.out, "keys already present; nothing changed")
	}
	return runKeysShow(p, nil, std)
}

func runKeysShow(p keys.Paths, _ []string, std streams) int {
	set, err := keys.Load(p)
	if err != nil {
		fmt.Fprintf(std.err, "xmlpipe keys show: %v\n", err)
		return exitFailure
	}
	for _, k := range []struct {
		who  string
		path string
		key  ed25519.PrivateKey
	}{{"organism", p.Organism, set.Organism}, {"owner", p.Owner, set.Owner}} {
		pub := k.key.Public().(ed25519.PublicKey)
		b, err := keys.MarshalPublic(pub)
		if err != nil {
			fmt.Fprintf(std.err, "xmlpipe keys show: %v\n", err)
			return exitFailure
		}
		fmt.Fprintf(std.out, "%s key (%s)\n  fingerprint %s\n%s", k.who, k.path, keys.Fingerprint(pub), b)
	}
	return exitOK
}

func runKeysExport(p keys.Paths, pos []string, std streams) int {
	if err := keys.Export(p, pos[0]); err != nil {
		fmt.Fprintf(std.err, "xmlpipe keys export: %v\n", err)
		return exitFailure
	}
	fmt.Fprintf(std.out, "wrote %s\n", pos[0])
	return exitOK
}
