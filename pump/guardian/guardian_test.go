package guardian

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const good = `---
document_type: constitution
version: "1.0"
scope: all_agents
authority_level: supreme
rules:
  - id: no-rm-rf
    deny: '(?i)\brm\s+-rf\b'
    reason: Destructive shell commands are forbidden
    suggestion: Delete single files instead
    severity: high
  - id: pay
    review: '(?i)\bpay\b'
    reason: Payments need a human
---
# Be good

## Core Principles
Text.
`

func TestParseGoodDocument(t *testing.T) {
	d, err := Parse("c.md", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if d.Type != "constitution" || d.Version != "1.0" || d.Scope != AllAgents || d.AuthorityLevel != "supreme" ||
		d.Mode != Extend || len(d.Rules) != 2 {
		t.Fatalf("document %+v", d)
	}
	r := d.Rules[0]
	if r.ID != "no-rm-rf" || r.Action != Deny || r.Severity != "high" || r.Line != 7 || r.Suggestion == "" {
		t.Fatalf("rule %+v", r)
	}
	if p := d.Rules[1]; p.Action != Review || p.Severity != "medium" || p.Line != 12 {
		t.Fatalf("rule %+v", p)
	}
	if !strings.HasPrefix(d.Body, "# Be good") || len(d.Sections) != 2 || d.Sections[1] != "Core Principles" {
		t.Fatalf("body %q sections %q", d.Body, d.Sections)
	}
}

func TestParseExampleDocuments(t *testing.T) {
	paths, _ := filepath.Glob("../../testdata/governance/*.md")
	if len(paths) == 0 {
		t.Fatal("no example documents")
	}
	g, err := Load(paths, []string{"researcher"})
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Rules()) < 3 {
		t.Fatalf("%d rules", len(g.Rules()))
	}
}

func TestParseRejectsBadDocumentsWithTheirLine(t *testing.T) {
	head := "---\ndocument_type: constitution\nversion: \"1\"\nscope: all_agents\nauthority_level: supreme\n"
	tests := []struct {
		name, doc, want string
	}{
		{"no frontmatter", "# hi\n", "c.md:1: a constitution document starts with YAML frontmatter"},
		{"unterminated frontmatter", "---\nversion: 1\n", "c.md:1: a constitution document starts"},
		{"bad yaml", "---\ndocument_type: [constitution\n---\n", "c.md:3: invalid YAML"},
		{"unknown key", head + "colour: red\n---\n", `c.md:6: unknown frontmatter key "colour"`},
		{"missing scope", "---\ndocument_type: constitution\nversion: 1\nauthority_level: x\n---\n", "scope is required"},
		{"wrong type", "---\ndocument_type: policy\nversion: 1\nscope: all_agents\nauthority_level: x\n---\n", `c.md:2: document_type: want constitution`},
		{"bad mode", head + "mode: merge\n---\n", `c.md:6: mode: want extend or replace`},
		{"bad date", head + "effective_date: soon\n---\n", `c.md:6: effective_date`},
		{"bad regex", head + "rules:\n  - id: a\n    deny: '(unclosed'\n    reason: r\n---\n", "c.md:8: rules[0].deny: bad regular expression (Go RE2 syntax)"},
		{"perl regex", head + "rules:\n  - id: a\n    deny: '(?<=x)y'\n    reason: r\n---\n", "c.md:8: rules[0].deny: bad regular expression"},
		{"missing id", head + "rules:\n  - deny: x\n    reason: r\n---\n", "c.md:7: rules[0]: id is required"},
		{"duplicate id", head + "rules:\n  - id: a\n    deny: x\n    reason: r\n  - id: a\n    review: y\n    reason: r\n---\n", `c.md:10: rules[1]: duplicate rule id "a" (first at line 7)`},
		{"both actions", head + "rules:\n  - id: a\n    deny: x\n    review: y\n    reason: r\n---\n", "c.md:9: rules[0]: give deny or review, not both"},
		{"no action", head + "rules:\n  - id: a\n    reason: r\n---\n", "c.md:7: rules[0] (a): give deny: or review:"},
		{"empty pattern", head + "rules:\n  - id: a\n    deny: ''\n    reason: r\n---\n", "c.md:7: rules[0] (a): the deny expression is empty"},
		{"no reason", head + "rules:\n  - id: a\n    deny: x\n---\n", "c.md:7: rules[0] (a): reason is required"},
		{"bad severity", head + "rules:\n  - id: a\n    deny: x\n    reason: r\n    severity: dire\n---\n", "c.md:10: rules[0].severity"},
		{"unknown rule key", head + "rules:\n  - id: a\n    deny: x\n    reason: r\n    when: always\n---\n", `c.md:10: rules[0]: unknown key "when"`},
		{"rules not a list", head + "rules: deny everything\n---\n", "c.md:6: rules: want a list"},
		{"list value", head + "rules:\n  - id: [a, b]\n    deny: x\n    reason: r\n---\n", "c.md:7: rules[0].id: want a single value"},
		{"not utf-8", head + "version2: \xff\n---\n", "c.md:6: document is not valid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("c.md", []byte(tt.doc))
			if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrDocument) {
				t.Fatalf("error %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestNewChecksScopesAndIDsAcrossDocuments(t *testing.T) {
	dir := t.TempDir()
	write := func(name, doc string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a := write("a.md", good)
	b := write("b.md", "---\ndocument_type: constitution\nversion: 1\nscope: poet\nauthority_level: agent_specific\nrules:\n  - id: pay\n    deny: x\n    reason: r\n---\n")
	_, err := Load([]string{a, b}, []string{"critic"})
	if err == nil || !strings.Contains(err.Error(), b+`:4: scope: no agent named "poet" (want all_agents or an agent: critic)`) ||
		!strings.Contains(err.Error(), b+`:7: duplicate rule id "pay" (first at `+a+":12)") {
		t.Fatalf("error: %v", err)
	}
	if _, err := Load([]string{filepath.Join(dir, "missing.md")}, nil); err == nil || !strings.Contains(err.Error(), "missing.md: no such file") {
		t.Fatalf("missing file: %v", err)
	}
	if _, err := Load([]string{dir}, nil); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("directory: %v", err)
	}
	if _, err := Load([]string{a, b}, []string{"Poet"}); err == nil || strings.Contains(err.Error(), "scope") {
		t.Fatalf("scope compares case-insensitively; error %v", err)
	}
}

func TestCheck(t *testing.T) {
	docs := []*Document{mustParse(t, good), mustParse(t, "---\ndocument_type: constitution\nversion: 1\nscope: critic\n"+
		"authority_level: agent_specific\nrules:\n  - id: no-poems\n    deny: '(?i)poem'\n    reason: The critic reads no poems\n    severity: low\n---\n")}
	g, err := New(docs, []string{"critic", "poet"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		s      Subject
		action Action
		ids    string
	}{
		{"allowed", Subject{From: "user", To: "poet", ToAgent: true, Payload: []byte("<PoetTask><Text>write</Text></PoetTask>")}, Allow, ""},
		{"deny inbound by text", Subject{From: "user", To: "poet", ToAgent: true, Payload: []byte("<PoetTask><Text>please RM  -rf /</Text></PoetTask>")}, Deny, "no-rm-rf"},
		{"deny outbound across elements", Subject{From: "poet", FromAgent: true, To: "run_command",
			Payload: []byte("<RunCommand><Command>rm</Command><Arg>-rf</Arg><Arg>/</Arg></RunCommand>")}, Deny, "no-rm-rf"},
		{"entities decoded", Subject{From: "poet", FromAgent: true, To: "x", Payload: []byte("<A><T>rm&#32;-rf</T></A>")}, Deny, "no-rm-rf"},
		{"review", Subject{From: "user", To: "poet", ToAgent: true, Payload: []byte("<P><Text>pay 5</Text></P>")}, Review, "pay"},
		{"deny beats review", Subject{From: "user", To: "poet", ToAgent: true, Payload: []byte("<P><Text>pay for rm -rf</Text></P>")}, Deny, "no-rm-rf"},
		{"agent scope applies to its messages", Subject{From: "user", To: "critic", ToAgent: true, Payload: []byte("<C><Text>a poem</Text></C>")}, Deny, "no-poems"},
		{"agent scope does not apply to others", Subject{From: "user", To: "poet", ToAgent: true, Payload: []byte("<C><Text>a poem</Text></C>")}, Allow, ""},
		{"agent scope applies to what it sends", Subject{From: "critic", FromAgent: true, To: "shouter", Payload: []byte("<C><Text>a POEM</Text></C>")}, Deny, "no-poems"},
		{"both scopes", Subject{From: "critic", FromAgent: true, To: "poet", ToAgent: true, Payload: []byte("<C><Text>poem; rm -rf</Text></C>")}, Deny, "no-rm-rf,no-poems"},
		{"no agent involved", Subject{From: "greeter", To: "shouter", Payload: []byte("<C><Text>rm -rf</Text></C>")}, Allow, ""},
		{"match on the XML", Subject{From: "poet", FromAgent: true, To: "x", Payload: []byte(`<RunCommand xmlns=""><Command>ls</Command></RunCommand>`)}, Allow, ""},
		// An answer the agent reads as its JSON text is judged in the form
		// its sender answered too.
		{"answer judged as answered", Subject{From: "run_command", To: "critic", ToAgent: true,
			Payload:  []byte(`<CriticTask><Text>{"Output":"see the notes"}</Text></CriticTask>`),
			Answered: []byte(`<RunCommandResult><Output>see the POEM</Output></RunCommandResult>`)}, Deny, "no-poems"},
		{"answer judged as the agent reads it", Subject{From: "run_command", To: "critic", ToAgent: true,
			Payload:  []byte(`<CriticTask><Text>{"Output":"a poem"}</Text></CriticTask>`),
			Answered: []byte(`<RunCommandResult><Output>notes</Output></RunCommandResult>`)}, Deny, "no-poems"},
		// Invisible and compatibility characters change nothing a reader or
		// a program sees, so they hide nothing from a rule.
		{"zero-width space hides nothing", Subject{From: "poet", FromAgent: true, To: "run_command",
			Payload: []byte("<RunCommand><Command>r\u200bm</Command><Arg>-rf</Arg></RunCommand>")}, Deny, "no-rm-rf"},
		{"soft hyphen hides nothing", Subject{From: "user", To: "poet", ToAgent: true, Payload: []byte("<P><Text>p\u00aday 5</Text></P>")}, Review, "pay"},
		{"word joiner and bidi controls hide nothing", Subject{From: "user", To: "poet", ToAgent: true,
			Payload: []byte("<P><Text>\u202erm\u2060 -rf\u202c</Text></P>")}, Deny, "no-rm-rf"},
		{"fullwidth letters read as letters", Subject{From: "user", To: "poet", ToAgent: true, Payload: []byte("<P><Text>ｒｍ －ｒｆ</Text></P>")}, Deny, "no-rm-rf"},
		{"no-break space reads as a space", Subject{From: "user", To: "poet", ToAgent: true, Payload: []byte("<P><Text>rm\u00a0-rf</Text></P>")}, Deny, "no-rm-rf"},
		{"a dash reads as a hyphen", Subject{From: "user", To: "poet", ToAgent: true, Payload: []byte("<P><Text>rm \u2013rf</Text></P>")}, Deny, "no-rm-rf"},
		{"combining marks hide nothing", Subject{From: "user", To: "poet", ToAgent: true, Payload: []byte("<P><Text>p\u0332a\u0332y\u0332 5</Text></P>")}, Review, "pay"},
		{"folding finds nothing new", Subject{From: "user", To: "poet", ToAgent: true, Payload: []byte("<P><Text>r\u200bmdir café</Text></P>")}, Allow, ""},
		{"failure judged by its detail", Subject{From: "run_command", To: "critic", ToAgent: true,
			Payload: []byte(`<huh><error>Message could not be processed</error></huh>`), Detail: "a poem in stderr"}, Deny, "no-poems"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := g.Check(tt.s)
			if v.Action != tt.action || strings.Join(v.RuleIDs(), ",") != tt.ids {
				t.Fatalf("verdict %s %v, want %s %s", v.Action, v.RuleIDs(), tt.action, tt.ids)
			}
		})
	}
	v := g.Check(Subject{From: "critic", FromAgent: true, To: "poet", ToAgent: true, Payload: []byte("<C><Text>poem; rm -rf</Text></C>")})
	r := v.Refusal()
	if r.Status != "refused" || r.Severity != "high" || r.Suggestion != "Delete single files instead" ||
		r.Reason != "Destructive shell commands are forbidden; The critic reads no poems" || len(r.ViolatedRules) != 2 {
		t.Fatalf("refusal %+v", r)
	}
	var none *Guardian
	if none.Check(Subject{ToAgent: true, Payload: []byte("rm -rf")}).Action != Allow || none.HasRules() {
		t.Fatal("a nil guardian is not empty")
	}
}

func TestTagRule(t *testing.T) {
	g, err := New([]*Document{mustParse(t, "---\ndocument_type: constitution\nversion: 1\nscope: all_agents\n"+
		"authority_level: supreme\nrules:\n  - id: no-commands\n    review: '<RunCommand\\b'\n    reason: commands need a human\n---\n")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v := g.Check(Subject{From: "a", FromAgent: true, To: "run_command", Payload: []byte(`<RunCommand xmlns=""><Command>ls</Command></RunCommand>`)}); v.Action != Review {
		t.Fatalf("verdict %v", v)
	}
}

func TestConstitutionText(t *testing.T) {
	doc := func(scope, mode, body string) *Document {
		return mustParse(t, "---\ndocument_type: constitution\nversion: 1\nscope: "+scope+"\nauthority_level: x\nmode: "+mode+"\n---\n"+body)
	}
	g, err := New([]*Document{doc("poet", "extend", "Poet rules."), doc(AllAgents, "extend", "All rules."),
		doc("critic", "replace", "Only critic rules."), doc("poet", "extend", "")}, []string{"poet", "critic"})
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]string{
		"poet":   "BUILTIN\n\nAll rules.\n\nPoet rules.",
		"critic": "Only critic rules.",
		"other":  "BUILTIN\n\nAll rules.",
	}
	for agent, want := range tests {
		if got := g.Constitution(agent, "BUILTIN"); got != want {
			t.Errorf("%s: %q, want %q", agent, got, want)
		}
	}
	var none *Guardian
	if none.Constitution("poet", "B") != "B" {
		t.Fatal("nil guardian changes the text")
	}
}

func TestText(t *testing.T) {
	tests := map[string]string{
		"<A><B>x</B><C> y z </C></A>":    "x y z",
		"<A>a <b>bold</b> and &amp;</A>": "a bold and &",
		"not xml at all <":               "not xml at all <",
		"":                               "",
	}
	for in, want := range tests {
		if got := Text([]byte(in)); got != want {
			t.Errorf("Text(%q) = %q, want %q", in, got, want)
		}
	}
}

func mustParse(t *testing.T, doc string) *Document {
	t.Helper()
	d, err := Parse("t.md", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return d
}
