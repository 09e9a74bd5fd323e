package xmltext

import (
	"encoding/xml"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAppendText(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain", "Hello Dan!", "Hello Dan!"},
		{"markup", `a&b<c>d"e'f`, `a&amp;b&lt;c&gt;d"e'f`},
		{"whitespace", "a\tb\nc\rd", "a\tb\nc&#xD;d"},
		{"control", "a\x00b\x1fc", "a\uFFFDb\uFFFDc"},
		{"invalid utf8", "a\xffb\xc3", "a\uFFFDb\uFFFD"},
		{"non-characters", "\uFFFE\uFFFF", "\uFFFD\uFFFD"},
		{"encoded surrogate", "\xed\xa0\x80", "\uFFFD\uFFFD\uFFFD"},
		{"multibyte kept", "é€😀", "é€😀"},
		{"cdata end", "]]>", "]]&gt;"},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(AppendText([]byte("<"), tt.in))
			if diff := cmp.Diff("<"+tt.want, got); diff != "" {
				t.Errorf("AppendText(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestAppendAttr(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain", "low", "low"},
		{"markup", `a&b<c>d"e'f`, `a&amp;b&lt;c&gt;d&quot;e'f`},
		{"whitespace", "a\tb\nc\rd", "a&#x9;b&#xA;c&#xD;d"},
		{"control", "\x01", "\uFFFD"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(AppendAttr(nil, tt.in))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("AppendAttr(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

// TestRoundTripThroughParser checks that what is escaped parses back to the
// input (for inputs made only of XML characters).
func TestRoundTripThroughParser(t *testing.T) {
	inputs := []string{"a&b", "x\r\ny", "\t\n\r lead", `q"'<>`, "é😀", "]]>"}
	for _, in := range inputs {
		doc := `<r a="` + string(AppendAttr(nil, in)) + `">` + string(AppendText(nil, in)) + `</r>`
		var v struct {
			A    string `xml:"a,attr"`
			Text string `xml:",chardata"`
		}
		if err := xml.Unmarshal([]byte(doc), &v); err != nil {
			t.Fatalf("%q: %v", doc, err)
		}
		if v.A != in || v.Text != in {
			t.Errorf("%q: attr %q text %q, want %q", doc, v.A, v.Text, in)
		}
	}
}

func TestIsChar(t *testing.T) {
	for r, want := range map[rune]bool{
		0x0: false, 0x9: true, 0xA: true, 0xB: false, 0xD: true, 0x1F: false, 0x20: true,
		0xD7FF: true, 0xD800: false, 0xDFFF: false, 0xE000: true, 0xFFFD: true, 0xFFFE: false,
		0xFFFF: false, 0x10000: true, 0x10FFFF: true, 0x110000: false,
	} {
		if got := IsChar(r); got != want {
			t.Errorf("IsChar(%U) = %v, want %v", r, got, want)
		}
	}
	if strings.ContainsRune(string(AppendText(nil, "\x7f")), 0xFFFD) {
		t.Errorf("DEL (U+007F) is an XML character and must be kept")
	}
}

// BenchmarkAppendText escapes a typical 150-byte message with one markup character.
func BenchmarkAppendText(b *testing.B) {
	s := strings.Repeat("Hello Dan, what a pleasure! ", 5) + "a & b"
	buf := make([]byte, 0, 256)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		buf = AppendText(buf[:0], s)
	}
}
