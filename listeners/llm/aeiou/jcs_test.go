package aeiou

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"testing"
)

// jsonSentinels names the canonical-JSON sentinels as the goldens spell them.
var jsonSentinels = map[string]error{
	"ErrJSONSyntax":      ErrJSONSyntax,
	"ErrFloat":           ErrFloat,
	"ErrIntegerRange":    ErrIntegerRange,
	"ErrDuplicateKey":    ErrDuplicateKey,
	"ErrInvalidString":   ErrInvalidString,
	"ErrTooDeep":         ErrTooDeep,
	"ErrUnsupportedType": ErrUnsupportedType,
}

type jcsCase struct {
	Name        string `json:"name"`
	Input       string `json:"input"`
	InputBase64 string `json:"input_base64"`
	Want        string `json:"want"`
	Error       string `json:"error"`
}

func loadJCSCases(t testing.TB) []jcsCase {
	t.Helper()
	b, err := os.ReadFile("testdata/jcs/cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Cases []jcsCase `json:"cases"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	return f.Cases
}

func (c jcsCase) input(t testing.TB) []byte {
	if c.InputBase64 == "" {
		return []byte(c.Input)
	}
	b, err := base64.StdEncoding.DecodeString(c.InputBase64)
	if err != nil {
		t.Fatalf("%s: %v", c.Name, err)
	}
	return b
}

// TestJCSGolden runs testdata/jcs/cases.json: RFC 8785 vectors (integers
// only), Unicode normalisation, escapes, integer extremes, key ordering,
// floats refused. An accepted input's canonical form must also be a fixed
// point.
func TestJCSGolden(t *testing.T) {
	cases := loadJCSCases(t)
	if len(cases) < 40 {
		t.Fatalf("only %d cases", len(cases))
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			got, err := Canonicalize(c.input(t))
			if c.Error != "" {
				want, ok := jsonSentinels[c.Error]
				if !ok {
					t.Fatalf("unknown sentinel %q in golden", c.Error)
				}
				if !errors.Is(err, want) {
					t.Fatalf("Canonicalize = %q, %v; want %v", got, err, want)
				}
				var je *JSONError
				if !errors.As(err, &je) || je.Offset < 0 {
					t.Fatalf("error %v is not a *JSONError with an offset", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Canonicalize: %v", err)
			}
			if string(got) != c.Want {
				t.Fatalf("Canonicalize =\n%q\nwant\n%q", got, c.Want)
			}
			again, err := Canonicalize(got)
			if err != nil || string(again) != string(got) {
				t.Fatalf("canonical form is not a fixed point: %q, %v", again, err)
			}
		})
	}
}

// TestJCSNoNormalisation checks that precomposed and decomposed forms of the
// same text stay different bytes.
func TestJCSNoNormalisation(t *testing.T) {
	pre, err := MarshalCanonical(map[string]any{"name": "\u00c5ngstr\u00f6m"})
	if err != nil {
		t.Fatal(err)
	}
	dec, err := MarshalCanonical(map[string]any{"name": "A\u030angstro\u0308m"})
	if err != nil {
		t.Fatal(err)
	}
	if string(pre) == string(dec) {
		t.Fatalf("precomposed and decomposed forms give the same bytes %q", pre)
	}
	if string(pre) != "{\"name\":\"\u00c5ngstr\u00f6m\"}" || string(dec) != "{\"name\":\"A\u030angstro\u0308m\"}" {
		t.Fatalf("forms were altered: %q %q", pre, dec)
	}
}

// TestMarshalCanonicalGoValues covers the Go types MarshalCanonical takes.
func TestMarshalCanonicalGoValues(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    any
		want string
		err  error
	}{
		{"ints", []any{int8(-8), int16(16), int32(-32), int64(64), 7, uint(1), uint8(8), uint16(16), uint32(32), uint64(64)}, "[-8,16,-32,64,7,1,8,16,32,64]", nil},
		{"max int", int64(MaxInteger), "9007199254740991", nil},
		{"min int", int64(-MaxInteger), "-9007199254740991", nil},
		{"int beyond", int64(MaxInteger + 1), "", ErrIntegerRange},
		{"int below", int64(-MaxInteger - 1), "", ErrIntegerRange},
		{"uint beyond", uint64(MaxInteger + 1), "", ErrIntegerRange},
		{"float64", 1.0, "", ErrFloat},
		{"float32", float32(2), "", ErrFloat},
		{"nested float", map[string]any{"a": []any{1, 0.5}}, "", ErrFloat},
		{"string map", map[string]string{"b": "2", "a": "1"}, `{"a":"1","b":"2"}`, nil},
		{"strings", []string{"x", "\n"}, `["x","\n"]`, nil},
		{"invalid utf8", "\xff", "", ErrInvalidString},
		{"invalid utf8 key", map[string]any{"\xff": 1}, "", ErrInvalidString},
		{"struct", struct{}{}, "", ErrUnsupportedType},
		{"nil", nil, "null", nil},
		{"bool", false, "false", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := MarshalCanonical(tc.v)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("MarshalCanonical = %q, %v; want %v", got, err, tc.err)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Fatalf("MarshalCanonical = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// TestMarshalCanonicalTooDeep checks the depth bound on Go values.
func TestMarshalCanonicalTooDeep(t *testing.T) {
	var v any = []any{}
	for range MaxJSONDepth + 1 {
		v = []any{v}
	}
	if _, err := MarshalCanonical(v); !errors.Is(err, ErrTooDeep) {
		t.Fatalf("err = %v, want ErrTooDeep", err)
	}
}

// TestCompareUTF16 checks the UTF-16 order against a direct encoding.
func TestCompareUTF16(t *testing.T) {
	words := []string{"", "a", "ab", "b", "\u0080", "\u00f6", "\u20ac", "\U0001F600", "\U0001F601", "\U00010000", "\ufb33", "\ue000", "\uffff", "a\U0001F600", "a\ue000"}
	for _, a := range words {
		for _, b := range words {
			got := compareUTF16(a, b)
			want := compareUnits(a, b)
			if (got < 0) != (want < 0) || (got == 0) != (want == 0) {
				t.Errorf("compareUTF16(%q, %q) = %d, want sign of %d", a, b, got, want)
			}
		}
	}
}

func compareUnits(a, b string) int {
	ua, ub := utf16Of(a), utf16Of(b)
	for i := 0; i < len(ua) && i < len(ub); i++ {
		if ua[i] != ub[i] {
			return int(ua[i]) - int(ub[i])
		}
	}
	return len(ua) - len(ub)
}

func utf16Of(s string) []uint16 {
	var u []uint16
	for _, r := range s {
		h, l := utf16Units(r)
		u = append(u, h)
		if l != 0 {
			u = append(u, l)
		}
	}
	return u
}
