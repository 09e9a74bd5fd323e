package config

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata/invalid/*.golden from the current output")

// TestInvalidGolden loads every testdata/invalid/*.yaml and compares the
// complete error text with the .golden file beside it.
func TestInvalidGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/invalid/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no testdata/invalid/*.yaml files")
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".yaml")
		t.Run(name, func(t *testing.T) {
			o, err := Load(file)
			if err == nil {
				t.Fatalf("Load succeeded, want an error (got %+v)", o)
			}
			if o != nil {
				t.Errorf("Load returned an organism with its error")
			}
			if !errors.Is(err, ErrConfig) {
				t.Errorf("error does not wrap ErrConfig: %v", err)
			}
			got := err.Error() + "\n"
			golden := strings.TrimSuffix(file, ".yaml") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("read golden (run with -update to create it): %v", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("error text (-want +got):\n%s", diff)
			}
		})
	}
}
