// Package search is the web_search tool: the reference's providers (serpapi,
// google custom search, bing) when tool_config names one with its key, and a
// clean refusal when none is configured.
package search

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/tools"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// Name is the tool's name in tools: and tool_config:.
const Name = "web_search"

// DefaultTimeout bounds one search.
const DefaultTimeout = 30 * time.Second

// Refusals.
var (
	ErrNotConfigured = errors.New("web_search: not configured (tool_config.web_search: provider and api_key_env)")
	ErrProvider      = errors.New("web_search: unknown provider (want serpapi, google or bing)")
	ErrEngineID      = errors.New("web_search: google custom search needs engine_id")
	ErrQuery         = errors.New("web_search: empty query")
	// ErrKeyUnset: api_key_env names a variable that is not set (the
	// error names it: "web_search: SERPAPI_KEY is not set …").
	ErrKeyUnset = errors.New("is not set (tool_config.web_search.api_key_env)")
)

// Endpoints are the providers' URLs (replaced in tests).
var Endpoints = map[string]string{
	"serpapi": "https://serpapi.com/search",
	"google":  "https://www.googleapis.com/customsearch/v1",
	"bing":    "https://api.bing.microsoft.com/v7.0/search",
}

// Tool is the web_search listener.
type Tool struct {
	Policy tools.Policy
	// Callers lets an answer reach a caller that takes another payload
	// (an agent takes text); nil: answer in the result type.
	Callers tools.Callers
	// Client makes the requests (default: a client with the timeout).
	Client *http.Client
}

// Handle searches and answers the caller.
func (t *Tool) Handle(ctx context.Context, p *WebSearch, md xmlpipe.Metadata) (xmlpipe.Response, error) {
	var c tools.Config
	if t.Policy != nil {
		c = t.Policy.Config(md.From, Name)
	}
	res := &WebSearchResult{Query: p.Query}
	hits, err := t.search(ctx, c, p)
	if err != nil {
		res.Error = err.Error()
	}
	res.Results = hits
	return tools.Answer(t.Callers, md, res), nil
}

func (t *Tool) search(ctx context.Context, c tools.Config, p *WebSearch) ([]Hit, error) {
	if c.Provider != "" && c.APIKey == "" && c.APIKeyEnv != "" {
		return nil, fmt.Errorf("web_search: %s %w", c.APIKeyEnv, ErrKeyUnset)
	}
	if c.Provider == "" || c.APIKey == "" {
		return nil, ErrNotConfigured
	}
	if strings.TrimSpace(p.Query) == "" {
		return nil, ErrQuery
	}
	n := min(max(tools.Or(p.NumResults, 5), 1), 20)
	endpoint, ok := Endpoints[strings.ToLower(c.Provider)]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrProvider, c.Provider)
	}
	q := url.Values{"q": {p.Query}}
	header := http.Header{}
	switch strings.ToLower(c.Provider) {
	case "serpapi":
		q.Set("api_key", c.APIKey)
		q.Set("num", strconv.Itoa(n))
		q.Set("engine", "google")
	case "google":
		if c.EngineID == "" {
			return nil, ErrEngineID
		}
		q.Set("key", c.APIKey)
		q.Set("cx", c.EngineID)
		q.Set("num", strconv.Itoa(min(n, 10)))
	case "bing":
		q.Set("count", strconv.Itoa(n))
		header.Set("Ocp-Apim-Subscription-Key", c.APIKey)
	}
	timeout := tools.Or(c.Timeout, DefaultTimeout)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint+"?"+q.Encode(), nil)
	if err != nil {
		return nil, fmt.Errorf("web_search: %w", err)
	}
	req.Header = header
	port := req.URL.Port()
	if port == "" {
		port = map[string]string{"http": "80"}[req.URL.Scheme]
		if port == "" {
			port = "443"
		}
	}
	if err := xmlpipe.CheckDial(ctx, net.JoinHostPort(req.URL.Hostname(), port)); err != nil {
		return nil, fmt.Errorf("web_search: %w", err) // the thread's profile does not allow the provider
	}
	client := t.Client
	if client == nil {
		client = &http.Client{Timeout: timeout}
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("web_search: %s: %w", c.Provider, errors.Unwrap(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, fmt.Errorf("web_search: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("web_search: %s answered %s", c.Provider, resp.Status)
	}
	hits, err := parse(strings.ToLower(c.Provider), body)
	if err != nil {
		return nil, fmt.Errorf("web_search: %s: %w", c.Provider, err)
	}
	if len(hits) > n {
		hits = hits[:n]
	}
	return hits, nil
}

func parse(provider string, body []byte) ([]Hit, error) {
	type item struct {
		Title, Name, Link, URL, Snippet string
	}
	var doc struct {
		Organic  []item `json:"organic_results"`
		Items    []item `json:"items"`
		WebPages struct {
			Value []item `json:"value"`
		} `json:"webPages"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, err
	}
	var out []Hit
	switch provider {
	case "serpapi":
		for _, it := range doc.Organic {
			out = append(out, Hit{Title: tools.Text([]byte(it.Title)), URL: it.Link, Snippet: tools.Text([]byte(it.Snippet))})
		}
	case "google":
		for _, it := range doc.Items {
			out = append(out, Hit{Title: tools.Text([]byte(it.Title)), URL: it.Link, Snippet: tools.Text([]byte(it.Snippet))})
		}
	case "bing":
		for _, it := range doc.WebPages.Value {
			out = append(out, Hit{Title: tools.Text([]byte(it.Name)), URL: it.URL, Snippet: tools.Text([]byte(it.Snippet))})
		}
	}
	return out, nil
}
