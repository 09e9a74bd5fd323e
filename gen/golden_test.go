package gen

import (
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// goldenTypes are the payloads whose XSD, example and prompt section are golden.
var goldenTypes = []struct {
	listener, description string
	typ                   reflect.Type
}{
	{"greeter", "Greeting agent - forwards to shouter", reflect.TypeFor[Greeting]()},
	{"shouter", "Shouts the greeting in ALL CAPS", reflect.TypeFor[GreetingResponse]()},
	{"response-handler", "Prints responses to console", reflect.TypeFor[ShoutedResponse]()},
	{"shop.order", "Places an order", reflect.TypeFor[Order]()},
}

// checkGolden compares got with testdata/name, or rewrites it under -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./gen -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
	}
}

func TestGolden(t *testing.T) {
	for _, g := range goldenTypes {
		t.Run(g.listener, func(t *testing.T) {
			ty, err := Describe(g.typ)
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, g.listener+".xsd", XSD(ty))
			checkGolden(t, g.listener+".example.xml", Example(ty))
			checkGolden(t, g.listener+".prompt.md", []byte(PromptSection(Peer{Name: g.listener, Description: g.description, Type: ty})+"\n"))
		})
	}
}

// TestGreeterUsageInstructions pins the whole usage_instructions text of the
// hello-world greeter (python-reference §5.6) with its real element names.
func TestGreeterUsageInstructions(t *testing.T) {
	ty, err := Describe(reflect.TypeFor[GreetingResponse]())
	if err != nil {
		t.Fatal(err)
	}
	got := UsageInstructions("greeter", "Greeting agent - forwards to shouter",
		[]Peer{{Name: "shouter", Description: "Shouts the greeting in ALL CAPS", Type: ty}, {Name: "calculator"}})
	checkGolden(t, "greeter.usage.txt", []byte(got))
}
