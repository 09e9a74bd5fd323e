package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// A mistyped command, subcommand or flag is named with what it was
// probably meant to be, as ctl's operations and the console's commands are;
// a flag value of the wrong kind says what it wants. All exit 2.
func TestTypoSuggestions(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"consle"}, `xmlpipe: unknown command "consle" (did you mean "console"?)`},
		{[]string{"help", "valdiate"}, `xmlpipe help: unknown command "valdiate" (did you mean "validate"?)`},
		{[]string{"journal", "tial"}, `xmlpipe journal: unknown command "tial" (did you mean "tail"?)`},
		{[]string{"users", "ad", "bob"}, `xmlpipe users: unknown command "ad" (did you mean "add"?)`},
		{[]string{"keys", "int"}, `xmlpipe keys: unknown command "int" (did you mean "init"?)`},
		{[]string{"wasm", "chek", "m.wasm"}, `xmlpipe wasm: unknown command "chek" (did you mean "check"?)`},
		{[]string{"console", "--conect", "https://127.0.0.1:8765"}, "flag provided but not defined: -conect (did you mean --connect?)"},
		{[]string{"run", "--listne=:8765"}, "flag provided but not defined: -listne (did you mean --listen?)"},
		{[]string{"journal", "tail", "--folow"}, "flag provided but not defined: -folow"},
		{[]string{"users", "add", "bob", "--rol", "admin"}, "flag provided but not defined: -rol (did you mean --role?)"},
		{[]string{"validate", "--confg", "x.yaml"}, "flag provided but not defined: -confg (did you mean --config?)"},
		{[]string{"run", "--log-level", "verbose"}, `xmlpipe run: --log-level "verbose": want debug, info, warn or error`},
		{[]string{"mcp", "--log-level", "loud"}, `xmlpipe mcp: --log-level "loud": want debug, info, warn or error`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			r := runIn(t, tt.args...)
			if r.code != exitUsage || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit 2 and %q", r.code, r.stderr, tt.want)
			}
		})
	}
	// Nothing close: no guess.
	if r := runIn(t, "frobnicate"); strings.Contains(r.stderr, "did you mean") {
		t.Errorf("frobnicate got a guess:\n%s", r.stderr)
	}
}

// `xmlpipe run -h` says which keys a reload applies, as the organism
// applies them (organism.ReloadableKeys, and gateways), and lists none of
// them among the keys that wait for a restart.
func TestRunHelpReloadKeys(t *testing.T) {
	r := runIn(t, "run", "-h")
	if r.code != exitOK {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	text := strings.Join(strings.Fields(r.stdout), " ")
	applied, refused, ok := strings.Cut(text, "apply at once")
	if !ok {
		t.Fatalf("run -h does not say what applies at once:\n%s", r.stdout)
	}
	if i := strings.LastIndex(applied, ". "); i >= 0 {
		applied = applied[i:]
	}
	for _, k := range append(organism.ReloadableKeys, "gateways") {
		if !strings.Contains(applied, k) {
			t.Errorf("run -h does not say that %s applies at a reload:\n%s", k, r.stdout)
		}
		if strings.Contains(refused, " "+k+",") || strings.Contains(refused, "("+k+",") {
			t.Errorf("run -h lists %s among the keys a reload refuses:\n%s", k, r.stdout)
		}
	}
}

// The README's Reload paragraph names every key a reload applies.
func TestReadmeReloadKeys(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, para, ok := strings.Cut(string(readme), "**Reload.**")
	if ok {
		para, _, ok = strings.Cut(para, "**What an acknowledgement means.**")
	}
	if !ok {
		t.Fatal("README.md has no **Reload.** paragraph before **What an acknowledgement means.**")
	}
	for _, k := range append(organism.ReloadableKeys, "gateways") {
		if !strings.Contains(para, "`"+k+"`") {
			t.Errorf("the README's Reload paragraph does not name `%s`, which a reload applies", k)
		}
	}
}

// The README's Commands section names the commands that take no
// --config; every other command takes it (its -h lists it).
func TestReadmeCommandsWithoutConfig(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`Every command that reads a configuration \(all but ([^)]*)\)`).FindStringSubmatch(string(readme))
	if m == nil {
		t.Fatal("README.md does not say which commands read no configuration")
	}
	var readmeSays []string
	for _, name := range regexp.MustCompile("`([a-z0-9]+)`").FindAllStringSubmatch(m[1], -1) {
		readmeSays = append(readmeSays, name[1])
	}
	var without []string
	for _, c := range commands() {
		if c.name == "help" {
			continue
		}
		r := runIn(t, c.name, "-h")
		if !strings.Contains(r.stdout, "--config") && !strings.Contains(r.stdout, "-config") {
			without = append(without, c.name)
		}
	}
	if diff := cmp.Diff(readmeSays, without); diff != "" {
		t.Errorf("commands without --config: the README (-) and the binary (+) differ:\n%s", diff)
	}
}
