package search

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/listeners/tools"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

func TestWebSearch(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		switch r.URL.Path {
		case "/serpapi":
			if q.Get("api_key") != "k" || q.Get("engine") != "google" || q.Get("num") != "2" {
				http.Error(w, "bad request", 400)
				return
			}
			_, _ = w.Write([]byte(`{"organic_results":[{"title":"A","link":"https://a.example","snippet":"a"},{"title":"B","link":"https://b.example"},{"title":"C","link":"https://c.example"}]}`))
		case "/google":
			if q.Get("key") != "k" || q.Get("cx") != "cx1" {
				http.Error(w, "bad request", 400)
				return
			}
			_, _ = w.Write([]byte(`{"items":[{"title":"G","link":"https://g.example","snippet":"g"}]}`))
		case "/bing":
			if r.Header.Get("Ocp-Apim-Subscription-Key") != "k" {
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			_, _ = w.Write([]byte(`{"webPages":{"value":[{"name":"Bi","url":"https://bi.example","snippet":"b"}]}}`))
		case "/down":
			http.Error(w, "down", http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	saved := Endpoints
	Endpoints = map[string]string{"serpapi": srv.URL + "/serpapi", "google": srv.URL + "/google", "bing": srv.URL + "/bing"}
	defer func() { Endpoints = saved }()

	call := func(c tools.Config, p WebSearch) *WebSearchResult {
		t.Helper()
		resp, err := (&Tool{Policy: tools.Fixed(c)}).Handle(context.Background(), &p, xmlpipe.Metadata{From: "agent"})
		if err != nil {
			t.Fatal(err)
		}
		return resp.(*xmlpipe.RespondResponse).Payload.(*WebSearchResult)
	}
	r := call(tools.Config{Provider: "serpapi", APIKey: "k"}, WebSearch{Query: "go", NumResults: 2})
	if r.Error != "" || len(r.Results) != 2 || r.Results[0].URL != "https://a.example" {
		t.Fatalf("serpapi: %+v", r)
	}
	if r := call(tools.Config{Provider: "google", APIKey: "k", EngineID: "cx1"}, WebSearch{Query: "go"}); r.Error != "" || r.Results[0].Title != "G" {
		t.Fatalf("google: %+v", r)
	}
	if r := call(tools.Config{Provider: "bing", APIKey: "k"}, WebSearch{Query: "go"}); r.Error != "" || r.Results[0].URL != "https://bi.example" {
		t.Fatalf("bing: %+v", r)
	}
	for _, tc := range []struct {
		name string
		c    tools.Config
		q    string
		want string
	}{
		{"unconfigured", tools.Config{}, "go", "not configured"},
		{"no key", tools.Config{Provider: "bing"}, "go", "not configured"},
		{"key variable unset", tools.Config{Provider: "bing", APIKeyEnv: "BING_KEY"}, "go",
			"web_search: BING_KEY is not set (tool_config.web_search.api_key_env)"},
		{"unknown provider", tools.Config{Provider: "altavista", APIKey: "k"}, "go", "unknown provider"},
		{"google without engine", tools.Config{Provider: "google", APIKey: "k"}, "go", "needs engine_id"},
		{"empty query", tools.Config{Provider: "bing", APIKey: "k"}, " ", "empty query"},
		{"provider refuses", tools.Config{Provider: "bing", APIKey: "wrong"}, "go", "401"},
	} {
		if r := call(tc.c, WebSearch{Query: tc.q}); !strings.Contains(r.Error, tc.want) || len(r.Results) != 0 {
			t.Errorf("%s: %+v, want %q", tc.name, r, tc.want)
		}
	}
}
