// Package layering_test holds the module's import-layering test: the rules of
// /work/shared/DESIGN.md §1 ("Data flows one way") checked against what the
// packages really import, so that an import against the layers fails
// `go test` (and `make test`) the day it appears.
package layering_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

// module is the module path; the rules below name packages relative to it.
const module = "github.com/xml-pipeline/xmlpipe"

// layerRule forbids some imports of some packages. Packages and imports are
// module-relative paths ("pump/bus", "listeners/llm").
type layerRule struct {
	// name says the rule as DESIGN.md does; it prefixes every violation.
	name string
	// applies reports whether the rule constrains the package.
	applies func(pkg string) bool
	// forbids reports whether the package may not import imp.
	forbids func(pkg, imp string) bool
}

// under reports whether pkg is dir or a package below it.
func under(pkg string, dirs ...string) bool {
	for _, d := range dirs {
		if pkg == d || strings.HasPrefix(pkg, d+"/") {
			return true
		}
	}
	return false
}

// transports are the organism's front doors: the main bus, the console REPL
// and the MCP server. Each imports pump/organism (whose client facade,
// organism.Backend, is what they serve and drive), never another transport.
var transports = []string{"pump/bus", "pump/console", "pump/mcp"}

// protocolLibraries are the main bus's protocol libraries: its frames
// (wire), login and sessions (auth), certificates (certs) and its one client
// (client), which the remote console and the load generator share. They
// live under pump/bus but are no part of the transport: they import no
// transport and not the organism, so any transport or tool may use them.
var protocolLibraries = []string{"pump/bus/wire", "pump/bus/auth", "pump/bus/certs", "pump/bus/client"}

// isTransport reports whether pkg is part of a transport (not one of the
// protocol libraries below it).
func isTransport(pkg string) bool {
	return under(pkg, transports...) && !under(pkg, protocolLibraries...)
}

// assembly are the pump's subpackages that put listeners together into an
// organism (organism), read their configuration (config, which names the
// listeners' own config types) or build one to measure (bench).
var assembly = []string{"pump/organism", "pump/config", "pump/bench"}

var layerRules = []layerRule{
	{
		name:    "gen and schemas are the base: they import nothing of ours above them",
		applies: func(pkg string) bool { return under(pkg, "gen", "schemas") },
		forbids: func(_, imp string) bool { return !under(imp, "gen", "schemas") },
	},
	{
		name:    "xmlpipe imports nothing of ours but schemas and gen",
		applies: func(pkg string) bool { return under(pkg, "xmlpipe") },
		forbids: func(_, imp string) bool { return !under(imp, "xmlpipe", "gen", "schemas") },
	},
	{
		name:    "the handler API (xmlpipe) and what it stands on never import the stage engine (xmlpipe/stage imports them)",
		applies: func(pkg string) bool { return under(pkg, "xmlpipe") && !under(pkg, "xmlpipe/stage") },
		forbids: func(_, imp string) bool { return under(imp, "xmlpipe/stage") },
	},
	{
		name:    "a message's failure vocabulary (xmlpipe/failure) imports nothing of ours",
		applies: func(pkg string) bool { return under(pkg, "xmlpipe/failure") },
		forbids: func(_, imp string) bool { return true },
	},
	{
		name:    "registry (kernel state) imports no pump, listener, OOB channel or command",
		applies: func(pkg string) bool { return under(pkg, "registry") },
		forbids: func(_, imp string) bool { return under(imp, "pump", "listeners", "cmd") || imp == "oob" },
	},
	{
		name:    "listeners never import pump or its subpackages (they take their own config types)",
		applies: func(pkg string) bool { return under(pkg, "listeners") },
		// oob (the channel, built on the pump) too; oob/keys is a leaf.
		forbids: func(_, imp string) bool { return under(imp, "pump", "cmd") || imp == "oob" },
	},
	{
		name:    "transports import pump/organism, never each other",
		applies: isTransport,
		forbids: func(pkg, imp string) bool {
			for _, t := range transports {
				if under(imp, t) && !under(pkg, t) && !under(imp, protocolLibraries...) {
					return true
				}
			}
			return false
		},
	},
	{
		name:    "the bus's protocol libraries (wire, auth, certs, client) import no transport and not the organism",
		applies: func(pkg string) bool { return under(pkg, protocolLibraries...) },
		forbids: func(_, imp string) bool {
			return isTransport(imp) || under(imp, "pump/organism")
		},
	},
	{
		name: "only the assembly (pump/organism, pump/config, pump/bench) of the pump's packages imports listeners",
		applies: func(pkg string) bool {
			return under(pkg, "pump") && !under(pkg, assembly...)
		},
		forbids: func(_, imp string) bool { return under(imp, "listeners") },
	},
}

// goPackage is what the test reads of `go list -json`.
type goPackage struct {
	ImportPath string
	Imports    []string
	Error      *struct{ Err string }
}

// listPackages runs `go list -json ./...` at the module root and returns the
// module's packages.
func listPackages(t *testing.T) []goPackage {
	t.Helper()
	goCmd, err := exec.LookPath("go") // go test puts GOROOT/bin first on PATH
	if err != nil {
		t.Fatalf("go command: %v", err)
	}
	cmd := exec.Command(goCmd, "list", "-e", "-json=ImportPath,Imports,Error", "./...")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []goPackage
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p goPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		if p.Error != nil {
			t.Fatalf("go list: %s: %s", p.ImportPath, p.Error.Err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		t.Fatal("go list listed no packages")
	}
	return pkgs
}

// relative returns path relative to the module ("" for the module root), and
// whether path is in the module at all.
func relative(path string) (string, bool) {
	if path == module {
		return "", true
	}
	rel, ok := strings.CutPrefix(path, module+"/")
	return rel, ok
}

// violations returns every import of pkgs a rule forbids, as
// "pkg -> imp" → the rules it breaks.
func violations(pkgs []goPackage) map[string][]string {
	out := map[string][]string{}
	for _, p := range pkgs {
		pkg, ok := relative(p.ImportPath)
		if !ok {
			continue
		}
		for _, path := range p.Imports {
			imp, ours := relative(path)
			if !ours {
				continue
			}
			for _, r := range layerRules {
				if r.applies(pkg) && r.forbids(pkg, imp) {
					edge := pkg + " -> " + imp
					out[edge] = append(out[edge], r.name)
				}
			}
		}
	}
	return out
}

// TestImportLayering fails on every non-test import of the module that runs
// against the layers. There are no exceptions. Test files are left out: a
// test may drive the whole organism end to end.
func TestImportLayering(t *testing.T) {
	found := violations(listPackages(t))
	edges := make([]string, 0, len(found))
	for e := range found {
		edges = append(edges, e)
	}
	sort.Strings(edges)
	for _, e := range edges {
		t.Errorf("import against the layers: %s: %s", e, strings.Join(found[e], "; "))
	}
}

// TestLayerRules checks the rules themselves on made-up import graphs: each
// forbidden edge is caught, each allowed one passes.
func TestLayerRules(t *testing.T) {
	tests := []struct {
		pkg, imp string
		bad      bool
	}{
		{"xmlpipe", "gen/xmltext", false},
		{"xmlpipe/codec", "schemas", false},
		{"xmlpipe/fields", "xmlpipe", false},
		{"xmlpipe", "registry", true},
		{"xmlpipe/internal/lx", "pump", true},
		{"xmlpipe/stage", "xmlpipe", false},
		{"xmlpipe/stage", "xmlpipe/failure", false},
		{"xmlpipe", "xmlpipe/stage", true},
		{"xmlpipe/fields", "xmlpipe/stage", true},
		{"xmlpipe/failure", "xmlpipe", true},
		{"xmlpipe/failure", "gen", true},
		{"pump", "xmlpipe/stage", false},
		{"gen", "xmlpipe", true},
		{"schemas", "gen", false},
		{"registry/store", "pump/config", true},
		{"registry", "xmlpipe", false},
		{"listeners/llm", "pump/config", true},
		{"listeners/llm", "listeners/llm/config", false},
		{"listeners/tools/kv", "registry/store", false},
		{"listeners/wasm", "oob", true},
		{"listeners/wasm", "oob/keys", false},
		{"registry", "oob", true},
		{"pump/bus", "pump/organism", false},
		{"pump/bus", "pump/console", true},
		{"pump/bus", "pump/bus/client", false},
		{"pump/console", "pump/bus/wire", false},
		{"pump/console", "pump/bus/client", false},
		{"pump/console", "pump/bus", true},
		{"pump/console", "pump/bus/internal/x", true},
		{"pump/console", "pump/mcp", true},
		{"pump/mcp", "pump/console", true},
		{"pump/bus/auth", "pump/mcp", true},
		{"pump/bus/client", "pump/bus", true},
		{"pump/bus/client", "pump/console", true},
		{"pump/bus/client", "pump/organism", true},
		{"pump/bus/client", "pump/bus/wire", false},
		{"pump/bus/client", "pump/bus/auth", false},
		{"pump/bus/wire", "pump/bus", true},
		{"pump/bus/auth/authtest", "pump/bus", true},
		{"pump/bench/busload", "pump/bus/client", false},
		{"pump/bench/busload", "pump/bus", false},
		{"pump/mcp", "listeners/mcpclient", true},
		{"pump/federation", "listeners/wasm", true},
		{"pump/observe", "listeners/llm", true},
		{"pump", "listeners/hello", true},
		{"pump/organism", "listeners/llm", false},
		{"pump/config", "listeners/llm/config", false},
		{"pump/bench", "listeners/hello", false},
		{"cmd/xmlpipe", "pump/console", false},
		{"oob", "pump", false},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s->%s", tc.pkg, tc.imp), func(t *testing.T) {
			got := violations([]goPackage{{ImportPath: module + "/" + tc.pkg, Imports: []string{module + "/" + tc.imp, "strings"}}})
			if bad := len(got) > 0; bad != tc.bad {
				t.Errorf("violation = %v (%v), want %v", bad, got, tc.bad)
			}
		})
	}
	if got := violations([]goPackage{{ImportPath: "example.com/other", Imports: []string{module + "/pump"}}}); len(got) != 0 {
		t.Errorf("a package outside the module was judged: %v", got)
	}
}
