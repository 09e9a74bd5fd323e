package config

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseDotEnv(t *testing.T) {
	env := map[string]string{"HOME": "/home/dan", "EMPTY": ""}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	tests := []struct {
		name     string
		src      string
		want     []envVar
		wantErrs []string
	}{
		{"plain", "A=1\nB = two words \n", []envVar{{"A", "1", 1}, {"B", "two words", 2}}, nil},
		{"comments and blanks", "# c\n\n   # indented\nA=1 # trailing\nB=a#b\n", []envVar{{"A", "1", 4}, {"B", "a#b", 5}}, nil},
		{"export prefix", "export A=1\nexport\tB=2\nexporter=3\n", []envVar{{"A", "1", 1}, {"B", "2", 2}, {"exporter", "3", 3}}, nil},
		{"single quotes are literal", `A='x\ny ${HOME} # not a comment'` + "\n", []envVar{{"A", `x\ny ${HOME} # not a comment`, 1}}, nil},
		{"single quote escapes", `A='it\'s'` + "\n", []envVar{{"A", "it's", 1}}, nil},
		{"double quote escapes", `A="tab\there \"q\" back\\slash \x"` + "\n", []envVar{{"A", "tab\there \"q\" back\\slash \\x", 1}}, nil},
		{"multi-line quoted", "A=\"line1\nline2\"\nB=3\n", []envVar{{"A", "line1\nline2", 1}, {"B", "3", 3}}, nil},
		{"empty values", "A=\nB=''\nC=\"\"\n", []envVar{{"A", "", 1}, {"B", "", 2}, {"C", "", 3}}, nil},
		{"expansion", "D=${HOME}/data\nE=\"${D}/x\"\nF=${UNSET:-fallback}\nG=${EMPTY:-dflt}\nH=${UNSET}\n", []envVar{
			{"D", "/home/dan/data", 1}, {"E", "/home/dan/data/x", 2}, {"F", "fallback", 3}, {"G", "dflt", 4}, {"H", "", 5},
		}, nil},
		{"environment wins over file in expansion", "HOME=/file\nX=${HOME}\n", []envVar{{"HOME", "/file", 1}, {"X", "/home/dan", 2}}, nil},
		{"CRLF and BOM", "\ufeffA=1\r\nB=\"2\"\r\n", []envVar{{"A", "1", 1}, {"B", "2", 2}}, nil},
		{"bare key is skipped", "JUSTKEY\nA=1\n", []envVar{{"A", "1", 2}}, nil},
		{"value with equals", "URL=http://x/?a=b\n", []envVar{{"URL", "http://x/?a=b", 1}}, nil},
		{"no trailing newline", "A=1", []envVar{{"A", "1", 1}}, nil},
		{"bad lines are reported, others kept", "A=1\nthis is junk\n=novalue\nB=\"unterminated\nC=3\n", []envVar{{"A", "1", 1}}, []string{
			".env:2: cannot parse line (want KEY=VALUE)",
			`.env:3: invalid variable name ""`,
			".env:4: cannot parse value of B",
		}},
		{"junk after a quoted value", "A=\"x\" y\nB=2\n", []envVar{{"B", "2", 2}}, []string{".env:1: cannot parse value of A"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, errs := parseDotEnv(".env", tt.src, lookup)
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(envVar{})); diff != "" {
				t.Errorf("vars (-want +got):\n%s", diff)
			}
			var gotErrs []string
			for _, e := range errs {
				gotErrs = append(gotErrs, e.Error())
			}
			if diff := cmp.Diff(tt.wantErrs, gotErrs); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoadDotEnv(t *testing.T) {
	t.Setenv("XMLPIPE_DOTENV_PRESET", "from-environment")
	for _, k := range []string{"XMLPIPE_DOTENV_XAI", "XMLPIPE_DOTENV_QUOTED", "XMLPIPE_DOTENV_AFTER_BAD"} {
		t.Setenv(k, "") // registers the cleanup
		os.Unsetenv(k)
	}
	err := LoadDotEnv("testdata/dotenv/sample.env")
	if err == nil || !errors.Is(err, ErrConfig) {
		t.Fatalf("LoadDotEnv = %v, want the bad line reported as a config error", err)
	}
	if got, want := err.Error(), "testdata/dotenv/sample.env:5: cannot parse line (want KEY=VALUE)"; got != want {
		t.Errorf("error = %q, want %q", got, want)
	}
	for k, want := range map[string]string{
		"XMLPIPE_DOTENV_XAI":       "xai-from-file",
		"XMLPIPE_DOTENV_PRESET":    "from-environment", // never overridden
		"XMLPIPE_DOTENV_QUOTED":    "two\nlines",
		"XMLPIPE_DOTENV_AFTER_BAD": "still-loaded",
	} {
		if got := os.Getenv(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
}

func TestLoadDotEnvMissingFile(t *testing.T) {
	if err := LoadDotEnv(filepath.Join(t.TempDir(), ".env")); err != nil {
		t.Errorf("LoadDotEnv of a missing file = %v, want nil", err)
	}
}

func TestLoadDotEnvUnreadable(t *testing.T) {
	err := LoadDotEnv(t.TempDir()) // a directory cannot be read as a file
	if err == nil || !errors.Is(err, ErrConfig) {
		t.Errorf("LoadDotEnv of a directory = %v, want a config error", err)
	}
}
