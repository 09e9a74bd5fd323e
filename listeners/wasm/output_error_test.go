package wasm

import (
	"errors"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
)

// TestBadOutputIsWordedForTheGuestAuthor: output that is not the declared
// response says what was expected (one <Sum> element, UTF-8 XML) and what
// came (JSON, text without an element, several elements, bytes that are not
// UTF-8) — not the parser's count or its repair.
func TestBadOutputIsWordedForTheGuestAuthor(t *testing.T) {
	pt, err := Fields{Root: "Sum", Fields: []Field{{Name: "Value", Type: "integer"}}}.PayloadType(nil)
	if err != nil {
		t.Fatal(err)
	}
	l := &Listener{response: pt}
	tests := []struct {
		name, out string
		want      []string
		notWant   []string
	}{
		{"JSON", `{"Value": 3}`, []string{"wrote JSON, not XML", "want one <Sum> element", `{"Value": 3}`},
			[]string{"0 elements"}},
		{"JSON array", ` [1, 2]`, []string{"wrote JSON, not XML", "want one <Sum> element"}, []string{"0 elements"}},
		{"plain text", "three", []string{"wrote no XML element", "want one <Sum> element", `"three"`},
			[]string{"0 elements"}},
		{"nothing", "", []string{"wrote nothing", "want one <Sum> element"}, []string{"0 elements"}},
		{"two elements", "<Sum><Value>1</Value></Sum><Sum><Value>2</Value></Sum>",
			[]string{"want one <Sum> element", "wrote 2: <Sum>, <Sum>"}, nil},
		{"invalid UTF-8", "<Sum><Value>1</Value></Sum>\xff\xfe", []string{"not UTF-8", "byte 0xff at offset 27",
			"want UTF-8 XML: one <Sum> element"}, []string{"repair", "U+FFFD", "replaced"}},
		{"wrong element", "<Total>3</Total>", []string{"want <Sum>, got <Total>"}, nil},
		{"wrong value", "<Sum><Value>three</Value></Sum>", []string{"Sum/Value", `"three"`}, nil},
		{"missing value", "<Sum></Sum>", []string{"<Value>"}, nil},
		{"not well-formed", "<Sum><Value>1</Sum>", []string{"not well-formed XML"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := l.decodeResponse([]byte(tc.out))
			if !errors.Is(err, ErrBadOutput) {
				t.Fatalf("error %v, want ErrBadOutput", err)
			}
			// The guest's output is at fault, not the caller's payload:
			// the sender's <huh> must not say its payload was invalid
			// (a model told so retries the same arguments).
			if got := failure.CannedText(err); got != failure.HuhProcessing {
				t.Errorf("the sender is told %q, want %q", got, failure.HuhProcessing)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(err.Error(), w) {
					t.Errorf("error %q says %q", err, w)
				}
			}
		})
	}
}
