package route

import (
	"slices"
	"testing"
)

func TestStem(t *testing.T) {
	for _, group := range [][]string{
		{"read", "reads", "reading"},
		{"file", "files", "filed"},
		{"calculate", "calculates", "calculated", "calculating", "calculation", "calculator"},
		{"greet", "greets", "greeting", "greeter"},
		{"multiply", "multiplies", "multiplied", "multiplying"},
		{"fetch", "fetches", "fetching"},
		{"search", "searches", "searching"},
		{"run", "running"},
		{"stop", "stopped", "stopping"},
		{"delete", "deletes", "deleted", "deleting"},
		{"convert", "converts", "converted", "converter"},
	} {
		want := stem(group[0])
		for _, w := range group[1:] {
			if got := stem(w); got != want {
				t.Errorf("stem(%q) = %q, stem(%q) = %q: want the same", w, got, group[0], want)
			}
		}
	}
	for _, w := range []string{"call", "pass", "is", "bus", "über"} {
		if got := stem(w); got == "" {
			t.Errorf("stem(%q) is empty", w)
		}
	}
}

func TestAnalyze(t *testing.T) {
	for _, tc := range []struct {
		text  string
		query bool
		want  []string
	}{
		{"I need to multiply six by seven", true, []string{"multiply", "@arithmetic", "six", "@arithmetic", "seven", "@arithmetic"}},
		{"what is 6*7?", true, []string{"@arithmetic"}},
		{"what is 6*7?", false, nil},
		{"OriginalSender", false, []string{"original", "send"}},
		{"XMLToJSON", false, []string{"xml", "@convert", "json", "@convert"}},
		{"run_command", false, []string{"run", "@command", "command", "@command"}},
		{"fetch https://example.org:8080/a", true, []string{"fetch", "http", "@web", "exampl", "org"}},
		{"at most 256 bytes", false, []string{"byt"}},
	} {
		got := analyze(tc.text, tc.query)
		if !slices.Equal(got, tc.want) {
			t.Errorf("analyze(%q, %v) = %q, want %q", tc.text, tc.query, got, tc.want)
		}
	}
}
