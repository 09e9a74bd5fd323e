package aeiou

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var envelopeSentinels = map[string]error{
	"ErrEnvelopeTooLarge": ErrEnvelopeTooLarge,
	"ErrSectionTooLarge":  ErrSectionTooLarge,
	"ErrLineTooLong":      ErrLineTooLong,
	"ErrNotUTF8":          ErrNotUTF8,
	"ErrEnvelopeSyntax":   ErrEnvelopeSyntax,
	"ErrMissingSection":   ErrMissingSection,
	"ErrSectionOrder":     ErrSectionOrder,
	"ErrUserData":         ErrUserData,
	"ErrActions":          ErrActions,
	"ErrMarkerInBody":     ErrMarkerInBody,
}

type envelopeCase struct {
	File      string `json:"file"`
	Note      string `json:"note"`
	Error     string `json:"error"`
	Canonical bool   `json:"canonical"`
	Want      *struct {
		Subject         string  `json:"subject"`
		Brief           string  `json:"brief"`
		Scratchpad      *string `json:"scratchpad"`
		ScratchpadBytes int     `json:"scratchpad_bytes"`
		Output          *string `json:"output"`
		OutputBytes     int     `json:"output_bytes"`
		Actions         string  `json:"actions"`
	} `json:"want"`
	Lints []struct {
		Lint    Lint   `json:"lint"`
		Section string `json:"section"`
		Line    int    `json:"line"`
	} `json:"lints"`
}

func readEnvelopeFile(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata/envelopes", name))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(name, ".gz") {
		return b
	}
	z, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	b, err = io.ReadAll(z)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func loadEnvelopeCases(t testing.TB) []envelopeCase {
	t.Helper()
	b, err := os.ReadFile("testdata/envelopes/cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Cases []envelopeCase `json:"cases"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	return f.Cases
}

// TestGoldenEnvelopes runs testdata/envelopes: minimal, with SCRATCHPAD and
// OUTPUT, duplicates, wrong order, oversize, non-UTF-8 and the other
// conformance cases.
func TestGoldenEnvelopes(t *testing.T) {
	cases := loadEnvelopeCases(t)
	if len(cases) < 30 {
		t.Fatalf("only %d cases", len(cases))
	}
	for _, c := range cases {
		t.Run(c.File, func(t *testing.T) {
			in := readEnvelopeFile(t, c.File)
			e, err := ParseEnvelope(in)
			if c.Error != "" {
				want := envelopeSentinels[c.Error]
				if want == nil {
					t.Fatalf("unknown sentinel %q", c.Error)
				}
				var ee *EnvelopeError
				if !errors.Is(err, want) || !errors.As(err, &ee) {
					t.Fatalf("ParseEnvelope error = %v, want %v (%s)", err, want, c.Note)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseEnvelope: %v (%s)", err, c.Note)
			}
			u, err := ParseUserData(e.UserData)
			if err != nil {
				t.Fatal(err)
			}
			w := c.Want
			if u.Subject != w.Subject || u.Brief != w.Brief || string(e.Actions) != w.Actions {
				t.Fatalf("parsed subject %q brief %q actions %q; want %q %q %q", u.Subject, u.Brief, e.Actions, w.Subject, w.Brief, w.Actions)
			}
			checkBody := func(name string, has bool, body []byte, want *string, wantLen int) {
				switch {
				case wantLen > 0:
					if !has || len(body) != wantLen {
						t.Errorf("%s: %d bytes (present %v), want %d", name, len(body), has, wantLen)
					}
				case want == nil:
					if has {
						t.Errorf("%s present, want absent", name)
					}
				case !has || string(body) != *want:
					t.Errorf("%s = %q (present %v), want %q", name, body, has, *want)
				}
			}
			checkBody("SCRATCHPAD", e.HasScratchpad, e.Scratchpad, w.Scratchpad, w.ScratchpadBytes)
			checkBody("OUTPUT", e.HasOutput, e.Output, w.Output, w.OutputBytes)
			if len(e.Lints) != len(c.Lints) {
				t.Fatalf("lints %+v, want %+v", e.Lints, c.Lints)
			}
			for i, l := range c.Lints {
				if g := e.Lints[i]; g.Lint != l.Lint || g.Section != l.Section || g.Line != l.Line {
					t.Fatalf("lint %d = %+v, want %+v", i, g, l)
				}
			}
			// Build gives back an envelope that parses to the same sections.
			built, err := BuildEnvelope(e)
			if err != nil {
				t.Fatalf("BuildEnvelope of a parsed envelope: %v", err)
			}
			if c.Canonical && !bytes.Equal(built, in) {
				t.Fatalf("BuildEnvelope differs from the file:\n%q\n%q", built, in)
			}
			again, err := ParseEnvelope(built)
			if err != nil {
				t.Fatal(err)
			}
			if !sameSections(e, again) {
				t.Fatalf("round trip changed the sections")
			}
		})
	}
}

func sameSections(a, b *Envelope) bool {
	return bytes.Equal(a.UserData, b.UserData) && bytes.Equal(a.Actions, b.Actions) &&
		a.HasScratchpad == b.HasScratchpad && bytes.Equal(a.Scratchpad, b.Scratchpad) &&
		a.HasOutput == b.HasOutput && bytes.Equal(a.Output, b.Output)
}

// TestBuildEnvelope covers BuildEnvelope's checks.
func TestBuildEnvelope(t *testing.T) {
	ud, err := MarshalUserData("subject <<<NSENV:V3:END>>>", "", map[string]any{"n": 1})
	if err != nil {
		t.Fatal(err)
	}
	actions := []byte("command\n  emit \"x\"\nendcommand")
	for _, tc := range []struct {
		name string
		e    Envelope
		err  error
	}{
		{"ok", Envelope{UserData: ud, Actions: actions}, nil},
		{"ok with sections", Envelope{UserData: ud, Actions: actions, HasScratchpad: true, Scratchpad: []byte("s\n"), HasOutput: true, Output: []byte("")}, nil},
		{"no userdata", Envelope{Actions: actions}, ErrMissingSection},
		{"no actions", Envelope{UserData: ud}, ErrMissingSection},
		{"bad userdata", Envelope{UserData: []byte(`{"subject":1}`), Actions: actions}, ErrUserData},
		{"bad actions", Envelope{UserData: ud, Actions: []byte("emit x")}, ErrActions},
		{"marker in output", Envelope{UserData: ud, Actions: actions, HasOutput: true, Output: []byte("a\n" + MarkerEnd + "\nb")}, ErrMarkerInBody},
		{"bom marker in scratchpad", Envelope{UserData: ud, Actions: actions, HasScratchpad: true, Scratchpad: []byte(bom + MarkerActions)}, ErrMarkerInBody},
		{"marker in actions", Envelope{UserData: ud, Actions: []byte("command\n" + MarkerStart + "\nendcommand")}, ErrMarkerInBody},
		{"non utf8", Envelope{UserData: ud, Actions: actions, HasOutput: true, Output: []byte("\xff")}, ErrNotUTF8},
		{"long line", Envelope{UserData: ud, Actions: actions, HasOutput: true, Output: bytes.Repeat([]byte("x"), MaxOutputLineBytes+1)}, ErrLineTooLong},
		{"big section", Envelope{UserData: ud, Actions: actions, HasScratchpad: true, Scratchpad: bytes.Repeat([]byte("x\n"), MaxSectionBytes/2+1)}, ErrSectionTooLarge},
		{"big envelope", Envelope{UserData: ud, Actions: actions, HasScratchpad: true, Scratchpad: bytes.Repeat([]byte("x\n"), MaxSectionBytes/2), HasOutput: true, Output: bytes.Repeat([]byte("y\n"), MaxSectionBytes/2)}, ErrEnvelopeTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := BuildEnvelope(&tc.e)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("BuildEnvelope error = %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			p, err := ParseEnvelope(b)
			if err != nil {
				t.Fatalf("ParseEnvelope(BuildEnvelope) = %v\n%s", err, b)
			}
			if !sameSections(p, &tc.e) {
				t.Fatalf("round trip changed the sections:\n%s", b)
			}
			u, err := ParseUserData(p.UserData)
			if err != nil || u.Subject != "subject <<<NSENV:V3:END>>>" {
				t.Fatalf("userdata %+v, %v", u, err)
			}
		})
	}
}

// TestParseUserDataNumbers checks that USERDATA keeps non-integer numbers.
func TestParseUserDataNumbers(t *testing.T) {
	u, err := ParseUserData([]byte(`{"subject":"s","fields":{"ratio":0.25,"big":12345678901234567890,"n":3,"list":[1.5]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if u.Fields["ratio"] != json.Number("0.25") || u.Fields["big"] != json.Number("12345678901234567890") || u.Fields["n"] != int64(3) {
		t.Fatalf("fields %#v", u.Fields)
	}
	if l := u.Fields["list"].([]any); l[0] != json.Number("1.5") {
		t.Fatalf("list %#v", l)
	}
}
