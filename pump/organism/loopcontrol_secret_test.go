package organism

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// TestLoopControlSecretEnvMustBeSet: an organism whose aeiou section names
// an HS256 secret in a variable that is not set refuses to start, naming
// the variable — rather than signing with something else than the
// operator asked for, without a word.
func TestLoopControlSecretEnvMustBeSet(t *testing.T) {
	t.Setenv("TEST_LLM_KEY", "sk-test")
	doc := "organism: {name: governed}\nllm:\n  retries: 0\n  backends:\n    - provider: openai\n" +
		"      api_key_env: TEST_LLM_KEY\n      base_url: http://127.0.0.1:1\n      model: gpt-test\n" +
		"aeiou: {hmac_secret_env: TEST_AEIOU_SECRET_NEVER_SET}\n" + looper
	cfg, err := config.Parse("organism.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	o, err := New(cfg, Options{Logger: slog.New(slog.DiscardHandler)})
	if err == nil {
		o.Shutdown(t.Context())
		t.Fatal("the organism was made with its HS256 secret variable unset")
	}
	if !strings.Contains(err.Error(), "TEST_AEIOU_SECRET_NEVER_SET") || !strings.Contains(err.Error(), "not set") {
		t.Fatalf("error %q does not say which variable is not set", err)
	}
}
