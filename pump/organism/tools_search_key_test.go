package organism

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/xml-pipeline/xmlpipe/listeners/tools/search"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// TestWebSearchNamesTheUnsetKeyVariable: web_search configured with
// api_key_env whose variable is not set answers that the variable is not
// set, naming it as the LLM backends do, rather than "not configured".
func TestWebSearchNamesTheUnsetKeyVariable(t *testing.T) {
	t.Setenv("XMLPIPE_TEST_SEARCH_KEY", "")
	p := toolPolicy{entries: map[string]map[string]config.ToolConfig{
		"web_search": {"web_search": {Provider: "bing", APIKeyEnv: "XMLPIPE_TEST_SEARCH_KEY"}}}}
	resp, err := (&search.Tool{Policy: p}).Handle(context.Background(), &search.WebSearch{Query: "go"},
		xmlpipe.Metadata{From: "agent"})
	if err != nil {
		t.Fatal(err)
	}
	got := resp.(*xmlpipe.RespondResponse).Payload.(*search.WebSearchResult).Error
	want := "web_search: XMLPIPE_TEST_SEARCH_KEY is not set (tool_config.web_search.api_key_env)"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("error (-want +got):\n%s", diff)
	}
}
