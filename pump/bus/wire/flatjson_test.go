package wire

import (
	"strings"
	"testing"
)

func TestScanFlat(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // the members seen, "key=value" (s: string, i: integer); "" with ok false
		ok   bool
	}{
		{`{"type":"send","id":7}`, "type=s:send id=i:7", true},
		{" {\n\t\"a\" : \"x y\" ,\r\"b_c\":-12 } ", "a=s:x y b_c=i:-12", true},
		{`{}`, "", true},
		{`{"a":""}`, "a=s:", true},
		{`{"a":"ü"}`, "a=s:ü", true},
		{`{"a":0}`, "a=i:0", true},
		{`{"a":01}`, "", false},
		{`{"a":1.5}`, "", false},
		{`{"a":1e2}`, "", false},
		{`{"a":-}`, "", false},
		{`{"a":true}`, "", false},
		{`{"a":null}`, "", false},
		{`{"a":[1]}`, "", false},
		{`{"a":{"b":1}}`, "", false},
		{`{"a":"x\"y"}`, "", false},
		{"{\"a\":\"x\ty\"}", "", false},
		{`{"A":"x"}`, "", false},
		{`{"a1":"x"}`, "", false},
		{`{"":"x"}`, "", false},
		{`{"a":"x",}`, "", false},
		{`{"a":"x"} x`, "", false},
		{`{"a":"x"`, "", false},
		{`{"a" "x"}`, "", false},
		{"{\"a\":\"\xff\"}", "", false},
		{`[]`, "", false},
		{``, "", false},
	} {
		var got []string
		ok := ScanFlat([]byte(tc.in), func(k, v []byte, str bool) bool {
			kind := "i:"
			if str {
				kind = "s:"
			}
			got = append(got, string(k)+"="+kind+string(v))
			return true
		})
		if ok != tc.ok || ok && strings.Join(got, " ") != tc.want {
			t.Errorf("ScanFlat(%q) = %v %q, want %v %q", tc.in, ok, got, tc.ok, tc.want)
		}
	}
	if ScanFlat([]byte(`{"a":"x","b":"y"}`), func(k, _ []byte, _ bool) bool { return string(k) != "b" }) {
		t.Error("ScanFlat went on after field refused a member")
	}
}
