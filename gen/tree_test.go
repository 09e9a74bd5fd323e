package gen

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func helloEntries() []Entry {
	var es []Entry
	for _, g := range goldenTypes {
		es = append(es, Entry{Listener: g.listener, Description: g.description, Type: g.typ})
	}
	return es
}

func TestWriteTreeMatchesGolden(t *testing.T) {
	dir := t.TempDir()
	if err := WriteTree(dir, helloEntries()); err != nil {
		t.Fatal(err)
	}
	for _, g := range goldenTypes {
		for file, golden := range map[string]string{
			SchemaFile:  g.listener + ".xsd",
			ExampleFile: g.listener + ".example.xml",
			PromptFile:  g.listener + ".prompt.md",
		} {
			got, err := os.ReadFile(filepath.Join(dir, g.listener, file))
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join("testdata", golden))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("%s/%s (-want +got):\n%s", g.listener, file, diff)
			}
		}
	}
	if err := CheckTree(dir, helloEntries()); err != nil {
		t.Errorf("CheckTree after WriteTree: %v", err)
	}
}

func TestCheckTreeReportsEveryStaleFile(t *testing.T) {
	dir := t.TempDir()
	entries := helloEntries()
	if err := WriteTree(dir, entries); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "greeter", ExampleFile)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "shouter", SchemaFile), []byte("<old/>"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "shop.order")); err != nil {
		t.Fatal(err)
	}
	err := CheckTree(dir, entries)
	if !errors.Is(err, ErrStale) {
		t.Fatalf("CheckTree = %v, want ErrStale", err)
	}
	for _, want := range []string{
		filepath.Join(dir, "greeter", ExampleFile) + " is missing",
		filepath.Join(dir, "shouter", SchemaFile) + " differs",
		filepath.Join(dir, "shop.order", SchemaFile) + " is missing",
		filepath.Join(dir, "shop.order", ExampleFile) + " is missing",
		filepath.Join(dir, "shop.order", PromptFile) + " is missing",
		"run go generate ./...",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "response-handler") {
		t.Errorf("error %q mentions an up-to-date listener", err)
	}
	if err := WriteTree(dir, entries); err != nil {
		t.Fatal(err)
	}
	if err := CheckTree(dir, entries); err != nil {
		t.Errorf("CheckTree after rewrite: %v", err)
	}
}

func TestTreeListenerNames(t *testing.T) {
	greeting := reflect.TypeFor[Greeting]()
	tests := []struct {
		name    string
		entries []Entry
		wantErr error
	}{
		{"dotted name is fine", []Entry{{Listener: "system.boot", Type: greeting}}, nil},
		{"empty", []Entry{{Listener: "", Type: greeting}}, ErrInvalidListener},
		{"slash", []Entry{{Listener: "a/b", Type: greeting}}, ErrInvalidListener},
		{"backslash", []Entry{{Listener: `a\b`, Type: greeting}}, ErrInvalidListener},
		{"dotdot", []Entry{{Listener: "..", Type: greeting}}, ErrInvalidListener},
		{"embedded dotdot", []Entry{{Listener: "a..b", Type: greeting}}, ErrInvalidListener},
		{"dot", []Entry{{Listener: ".", Type: greeting}}, ErrInvalidListener},
		{"twice", []Entry{{Listener: "a", Type: greeting}, {Listener: "a", Type: greeting}}, ErrInvalidListener},
		{"bad type", []Entry{{Listener: "a", Type: reflect.TypeFor[withMap]()}}, ErrUnsupported},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			err := WriteTree(dir, tt.entries)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("WriteTree = %v, want %v", err, tt.wantErr)
			}
			if checkErr := CheckTree(dir, tt.entries); tt.wantErr != nil && !errors.Is(checkErr, tt.wantErr) {
				t.Errorf("CheckTree = %v, want %v", checkErr, tt.wantErr)
			}
			if tt.wantErr != nil {
				if left, _ := os.ReadDir(dir); len(left) != 0 {
					t.Errorf("a failed WriteTree left %d entries in %s", len(left), dir)
				}
			}
		})
	}
}
