package config

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestRoutingForms(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want Routing
	}{
		{"default", "organism: {name: x}", Routing{Embeddings: Embeddings{Provider: EmbedTFIDF, Timeout: Duration(30 * time.Second)}}},
		{"scalar", "routing: {embeddings: TFIDF}", Routing{Embeddings: Embeddings{Provider: EmbedTFIDF, Timeout: Duration(30 * time.Second)}}},
		{"openai", "routing:\n  embeddings: {provider: openai, model: text-embedding-3-small, api_key_env: OPENAI_API_KEY}\n  fill_models: [cheap, strong]",
			Routing{Embeddings: Embeddings{Provider: EmbedOpenAI, Model: "text-embedding-3-small", BaseURL: "https://api.openai.com/v1",
				APIKeyEnv: "OPENAI_API_KEY", Timeout: Duration(30 * time.Second)}, FillModels: []string{"cheap", "strong"}}},
		{"ollama", "routing: {embeddings: {provider: Ollama, model: nomic-embed-text, base_url: 'http://gpu:11434', timeout: 5s}}",
			Routing{Embeddings: Embeddings{Provider: EmbedOllama, Model: "nomic-embed-text", BaseURL: "http://gpu:11434",
				Timeout: Duration(5 * time.Second)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := Parse("/o/organism.yaml", []byte(tt.src))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(tt.want, o.Routing); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
