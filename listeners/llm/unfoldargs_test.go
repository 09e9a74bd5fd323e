package llm

import (
	"testing"
)

// TestUnfoldArgsErrorsReadForAModel: context_unfold arguments of the wrong
// shape are refused in words a model can act on — which argument, what it
// must be — not Go's decoder's ("Go struct field .id of type string").
func TestUnfoldArgsErrorsReadForAModel(t *testing.T) {
	for _, tc := range []struct{ args, want string }{
		{`{"id":5}`, `"id" must be a string, like "s12"`},
		{`{"id":"s1","offset":"ten"}`, `"offset" must be a whole number of bytes, like 4096`},
		{`{"id":"s1","offset":1.5}`, `"offset" must be a whole number of bytes, like 4096`},
		{`{"ids":"s1"}`, `the arguments are "id" and "offset", not "ids"`},
		{`[1]`, `the arguments must be a JSON object: {"id": "s12"} (and "offset" to read on)`},
		{`{"id":`, `the arguments must be a JSON object: {"id": "s12"} (and "offset" to read on)`},
	} {
		_, _, err := unfoldArgs([]byte(tc.args))
		if err == nil || err.Error() != tc.want {
			t.Errorf("unfoldArgs(%s) = %v, want %q", tc.args, err, tc.want)
		}
	}
	if id, off, err := unfoldArgs([]byte(`{"id":" s3 ","offset":10}`)); err != nil || id != "s3" || off != 10 {
		t.Errorf("good arguments: %q %d %v", id, off, err)
	}
}
