package organism

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestLoadFindsTheReferenceDotEnv: the Python server keeps its config in
// config/organism.yaml and its .env at the repository root, where
// load_dotenv() finds it by walking up; Load of that organism.yaml reads the
// same .env (the nearest walking up from the file), so the API keys a user
// migrates with are set — and a .env beside the file still wins.
func TestLoadFindsTheReferenceDotEnv(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"repository root", map[string]string{".env": "XMLPIPE_TEST_DOTENV_KEY=from-root\n"}, "from-root"},
		{"beside the file wins", map[string]string{
			".env":        "XMLPIPE_TEST_DOTENV_KEY=from-root\n",
			"config/.env": "XMLPIPE_TEST_DOTENV_KEY=beside\n",
		}, "beside"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("XMLPIPE_TEST_DOTENV_KEY", "")
			if err := os.Unsetenv("XMLPIPE_TEST_DOTENV_KEY"); err != nil {
				t.Fatal(err)
			}
			root := t.TempDir()
			files := map[string]string{"config/organism.yaml": "organism: {name: hello-world}\n"}
			for name, body := range tt.files {
				files[name] = body
			}
			for name, body := range files {
				path := filepath.Join(root, name)
				if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			o, err := Load(filepath.Join(root, "config", "organism.yaml"), Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer o.Shutdown(context.Background())
			got, _ := os.LookupEnv("XMLPIPE_TEST_DOTENV_KEY")
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("XMLPIPE_TEST_DOTENV_KEY after Load (-want +got):\n%s", diff)
			}
		})
	}
}
