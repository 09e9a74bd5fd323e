package gen

import (
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// lintTypes are checked with xmllint: the XSD compiles and the example validates.
var lintTypes = []reflect.Type{
	reflect.TypeFor[Greeting](),
	reflect.TypeFor[GreetingResponse](),
	reflect.TypeFor[ShoutedResponse](),
	reflect.TypeFor[Order](),
	reflect.TypeFor[Kinds](),
	reflect.TypeFor[embedding](),
	reflect.TypeOf(struct {
		XMLName xml.Name `xml:"urn:test:empty Empty"`
	}{}),
	reflect.TypeOf(struct {
		XMLName xml.Name   `xml:"Opt"`
		A       *int       `xml:"a,attr" doc:"an optional attribute"`
		E       *string    `xml:"e,attr" enum:"x|y"`
		W       []string   `xml:"List>Entry,omitempty" enum:"p|q" doc:"a & b < c"`
		T       *time.Time `doc:"a very long documentation text that is not used as an example value"`
		S       []struct {
			V uint8 `xml:"v,attr"`
		}
	}{}),
}

// xmllint runs xmllint --noout --schema on files in dir and returns its output.
func xmllint(t *testing.T, dir, schema, instance string) (string, error) {
	t.Helper()
	cmd := exec.Command("xmllint", "--noout", "--nonet", "--schema", schema, instance)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func requireXmllint(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("xmllint"); err != nil {
		t.Skip("xmllint not installed (apt-get install libxml2-utils)")
	}
}

func TestExamplesValidateWithXmllint(t *testing.T) {
	requireXmllint(t)
	for _, rt := range lintTypes {
		ty, err := Describe(rt)
		if err != nil {
			t.Fatalf("%v: %v", rt, err)
		}
		t.Run(ty.Name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, "s.xsd", XSD(ty))
			write(t, dir, "e.xml", Example(ty))
			if out, err := xmllint(t, dir, "s.xsd", "e.xml"); err != nil {
				t.Errorf("xmllint: %v\n%s\nXSD:\n%s\nexample:\n%s", err, out, XSD(ty), Example(ty))
			}
		})
	}
}

// TestPythonInstances checks that the generated hello-world schemas accept and
// reject what the Python-generated ones do.
func TestPythonInstances(t *testing.T) {
	requireXmllint(t)
	tests := []struct {
		name     string
		typ      reflect.Type
		instance string
		valid    bool
	}{
		{"bootstrap test instance", reflect.TypeFor[Greeting](), `<Greeting><Name>Test</Name></Greeting>`, true},
		{"empty string", reflect.TypeFor[Greeting](), `<Greeting><Name></Name></Greeting>`, true},
		{"pump form", reflect.TypeFor[GreetingResponse](), `<GreetingResponse xmlns=""><Message>Hello Dan!</Message><OriginalSender>response-handler</OriginalSender></GreetingResponse>`, true},
		{"snake case", reflect.TypeFor[Greeting](), `<Greeting><name>Test</name></Greeting>`, false},
		{"missing field", reflect.TypeFor[GreetingResponse](), `<GreetingResponse><Message>x</Message></GreetingResponse>`, false},
		{"wrong order", reflect.TypeFor[GreetingResponse](), `<GreetingResponse><OriginalSender>a</OriginalSender><Message>x</Message></GreetingResponse>`, false},
		{"extra field", reflect.TypeFor[ShoutedResponse](), `<ShoutedResponse><Message>x</Message><Extra/></ShoutedResponse>`, false},
		{"namespaced", reflect.TypeFor[Greeting](), `<Greeting xmlns="urn:x"><Name>Test</Name></Greeting>`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ty, err := Describe(tt.typ)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			write(t, dir, "s.xsd", XSD(ty))
			write(t, dir, "i.xml", []byte(tt.instance))
			out, err := xmllint(t, dir, "s.xsd", "i.xml")
			if (err == nil) != tt.valid {
				t.Errorf("valid = %v, want %v:\n%s", err == nil, tt.valid, out)
			}
		})
	}
}

func write(t *testing.T, dir, name string, b []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
		t.Fatal(err)
	}
}
