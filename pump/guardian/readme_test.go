package guardian

import (
	"encoding/xml"
	"os"
	"strings"
	"testing"
)

// readmeConstitution is the README's example constitution document: the
// ```markdown block that declares document_type: constitution.
func readmeConstitution(t *testing.T) []byte {
	t.Helper()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const open = "```markdown\n---\ndocument_type: constitution"
	i := strings.Index(string(readme), open)
	if i < 0 {
		t.Fatal("README.md has no ```markdown block declaring a constitution")
	}
	rest := string(readme[i+len("```markdown\n"):])
	end := strings.Index(rest, "\n```")
	if end < 0 {
		t.Fatal("the README's constitution block is not closed")
	}
	return []byte(rest[:end+1])
}

// TestReadmeExampleRules: the README's example rules catch the forms users
// type — a recursive rm however its flags are written (rm -r -f, rm -fr,
// rm --recursive --force, sudo rm -Rf, rm dir -rf, one flag per element)
// — and let an ordinary rm through; the payment rule sends a payment to a
// human. So does the testdata constitution the README links to.
func TestReadmeExampleRules(t *testing.T) {
	command := func(s string) []byte {
		var b strings.Builder
		if err := xml.EscapeText(&b, []byte(s)); err != nil {
			t.Fatal(err)
		}
		return []byte("<RunCommand><Command>" + b.String() + "</Command></RunCommand>")
	}
	tests := []struct {
		name    string
		payload []byte
		want    Action
	}{
		{"rm -rf", command("rm -rf /"), Deny},
		{"rm -r -f", command("rm -r -f /tmp/x"), Deny},
		{"rm -f -r", command("rm -f -r /tmp/x"), Deny},
		{"rm -fr", command("rm -fr build"), Deny},
		{"rm -Rf", command("sudo rm -Rf /var/lib"), Deny},
		{"rm -rfv", command("rm -rfv build"), Deny},
		{"rm -r", command("rm -r build"), Deny},
		{"long flags", command("rm --recursive --force build"), Deny},
		{"flags after the operand", command("rm build -rf"), Deny},
		{"after another command", command("cd /tmp && rm -r -f x"), Deny},
		{"tab", command("rm\t-r\t-f x"), Deny},
		{"one flag per element", []byte("<RunCommand><Command>rm</Command><Arg>-r</Arg><Arg>-f</Arg><Arg>/</Arg></RunCommand>"), Deny},
		{"en dash", command("rm \u2013r \u2013f x"), Deny},
		{"plain rm", command("rm notes.txt"), Allow},
		{"rm -f", command("rm -f notes.txt"), Allow},
		{"rm -i", command("rm -i my-report.txt"), Allow},
		{"not rm", command("confirm -r"), Allow},
		{"rm then another command", command("rm notes.txt; ls -r"), Allow},
		{"payment", []byte("<Task><Text>pay $50 to Bob</Text></Task>"), Review},
	}
	for _, doc := range []struct{ name string }{{"README.md"}, {"../../testdata/governance/CONSTITUTION.md"}} {
		var data []byte
		if doc.name == "README.md" {
			data = readmeConstitution(t)
		} else {
			var err error
			if data, err = os.ReadFile(doc.name); err != nil {
				t.Fatal(err)
			}
		}
		d, err := Parse(doc.name, data)
		if err != nil {
			t.Fatalf("%s: %v", doc.name, err)
		}
		g, err := New([]*Document{d}, []string{"researcher"})
		if err != nil {
			t.Fatalf("%s: %v", doc.name, err)
		}
		for _, tt := range tests {
			t.Run(doc.name+"/"+tt.name, func(t *testing.T) {
				v := g.Check(Subject{From: "researcher", FromAgent: true, To: "run_command", Payload: tt.payload})
				if v.Action != tt.want {
					t.Errorf("%s: %v (rules %v), want %v", tt.payload, v.Action, v.RuleIDs(), tt.want)
				}
			})
		}
	}
}
