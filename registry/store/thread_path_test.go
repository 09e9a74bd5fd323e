package store

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestThreadPathJSON: the path shortcut writes what json.Marshal writes
// and reads what json.Unmarshal reads.
func TestThreadPathJSON(t *testing.T) {
	for _, path := range [][]string{nil, {}, {"console"}, {"console", "greeter", "shouter"},
		{"a b", "x.y:z", "a,b"}, {`q"uote`}, {`back\slash`}, {"<tag>", "a&b"}, {"dän"}, {"tab\there"}, {""}} {
		got, err := marshalPath(path)
		if err != nil {
			t.Fatal(err)
		}
		want := path
		if want == nil {
			want = []string{}
		}
		wantJSON, _ := json.Marshal(want)
		if string(got) != string(wantJSON) {
			t.Errorf("marshalPath(%q) = %s, json.Marshal %s", path, got, wantJSON)
		}
		back, err := unmarshalPath(string(got))
		if err != nil || !cmp.Equal(back, want) {
			t.Errorf("unmarshalPath(%s) = %q, %v; want %q", got, back, err, want)
		}
	}
}

// FuzzThreadPathJSON: for any text, unmarshalPath answers as json.Unmarshal.
func FuzzThreadPathJSON(f *testing.F) {
	for _, s := range []string{`[]`, `["a","b"]`, `["a",]`, `[ "a"]`, `["a\"b"]`, `null`, `["a"`, `[""]`, `["\u003c"]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := unmarshalPath(s)
		var want []string
		werr := json.Unmarshal([]byte(s), &want)
		if (err == nil) != (werr == nil) || (err == nil && !cmp.Equal(got, want)) {
			t.Fatalf("unmarshalPath(%q) = %q, %v; json.Unmarshal %q, %v", s, got, err, want, werr)
		}
	})
}
