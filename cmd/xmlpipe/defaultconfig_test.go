package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestResolveConfigFindsThePythonDefault: without an argument the
// configuration is ./organism.yaml, else the Python server's default
// ./config/organism.yaml (what a user who ran run_organism.py in their
// checkout has), and only then the embedded hello-world.
func TestResolveConfigFindsThePythonDefault(t *testing.T) {
	tests := []struct {
		name  string
		files []string
		want  configSource
	}{
		{"ours", []string{"organism.yaml"}, configSource{path: "organism.yaml"}},
		{"the Python server's", []string{"config/organism.yaml"}, configSource{path: filepath.Join("config", "organism.yaml")}},
		{"ours first", []string{"organism.yaml", "config/organism.yaml"}, configSource{path: "organism.yaml"}},
		{"none", nil, configSource{path: embeddedName, embedded: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range tt.files {
				path := filepath.Join(dir, f)
				if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte("organism: {name: x}\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			t.Chdir(dir)
			if diff := cmp.Diff(tt.want, resolveConfig(nil), cmp.AllowUnexported(configSource{})); diff != "" {
				t.Errorf("resolveConfig(nil) (-want +got):\n%s", diff)
			}
		})
	}
}
