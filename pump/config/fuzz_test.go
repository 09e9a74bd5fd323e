package config

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse feeds arbitrary bytes to Parse: it must never panic, every
// error must wrap ErrConfig, and every accepted configuration must pass
// Validate again.
func FuzzParse(f *testing.F) {
	seeds, err := filepath.Glob("testdata/*/*.yaml")
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range seeds {
		data, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("listeners: [{name: a, payload_class: b, handler: c, description: d, peers: [a]}]"))
	f.Add([]byte("journal: {retention: retain_days(99999999999999999999)}"))
	f.Add([]byte("profiles: {p: {listeners: ['*'], retention: window(9999999999999999d)}}"))
	f.Add([]byte("profiles: {p: {listeners: ['*'], retention: {window: -1ns}}}"))
	f.Add([]byte("a: &a [*a, *a]\nb: *a"))
	f.Fuzz(func(t *testing.T, data []byte) {
		o, err := Parse("organism.yaml", data)
		if err != nil {
			if o != nil {
				t.Error("Parse returned an organism with its error")
			}
			if !errors.Is(err, ErrConfig) {
				t.Errorf("error does not wrap ErrConfig: %v", err)
			}
			return
		}
		if err := o.Validate(); err != nil {
			t.Errorf("accepted configuration fails Validate: %v", err)
		}
		for i := range o.Listeners {
			_ = o.Pos(childIndex("listeners", i) + ".payload_class")
		}
	})
}

// FuzzParseDotEnv feeds arbitrary text to the .env parser: it must never
// panic and must report every problem with a line.
func FuzzParseDotEnv(f *testing.F) {
	for _, s := range []string{"A=1\n", "export B='x'\n", "C=\"a\\nb\"\n", "D=${A:-x}\n", "junk\n", "E=\"open\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		vars, errs := parseDotEnv(".env", src, func(string) (string, bool) { return "", false })
		for _, v := range vars {
			if !validEnvKey(v.key) {
				t.Errorf("accepted invalid key %q", v.key)
			}
		}
		for _, e := range errs {
			if e.Pos.Line < 1 {
				t.Errorf("problem without a line: %v", e)
			}
		}
	})
}
