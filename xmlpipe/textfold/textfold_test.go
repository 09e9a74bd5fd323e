package textfold

import "testing"

func TestFold(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"rm -rf /", "rm -rf /"},
		{"r\u200bm -rf", "rm -rf"},
		{"p\u00aday $5", "pay $5"},
		{"ｒｍ －ｒｆ", "rm -rf"},
		{"rm\u00a0\u2013rf", "rm -rf"},
		{"r\u0301m", "ŕm"}, // NFKC composes a mark it can; the rest are dropped
		{"a\u202eb", "ab"},
		{"\ufeffsecret", "secret"},
	} {
		if got := Fold(c.in); got != c.want {
			t.Errorf("Fold(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
