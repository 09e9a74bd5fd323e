package librarian

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Exist is an eXist-db REST endpoint (the reference's protocol).
type Exist struct {
	// URL is the REST root, e.g. http://localhost:8080/exist/rest.
	URL                string
	Username, Password string
	Client             *http.Client
}

const existMaxBody = 4 << 20

func (x *Exist) do(ctx context.Context, method, p string, body io.Reader, contentType string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(x.URL, "/")+p, body)
	if err != nil {
		return 0, "", err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if x.Username != "" {
		req.SetBasicAuth(x.Username, x.Password)
	}
	client := x.Client
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", fmt.Errorf("librarian: exist-db: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, existMaxBody))
	return resp.StatusCode, string(b), err
}

// Store PUTs the document.
func (x *Exist) Store(ctx context.Context, p, content string) error {
	status, body, err := x.do(ctx, http.MethodPut, p, strings.NewReader(content), "application/xml")
	if err != nil {
		return err
	}
	if status != http.StatusOK && status != http.StatusCreated {
		return fmt.Errorf("librarian: exist-db error %d: %s", status, clip(body))
	}
	return nil
}

// Get GETs the document.
func (x *Exist) Get(ctx context.Context, p string) (string, error) {
	status, body, err := x.do(ctx, http.MethodGet, p, nil, "")
	switch {
	case err != nil:
		return "", err
	case status == http.StatusNotFound:
		return "", fmt.Errorf("%w: %s", ErrNotFound, p)
	case status != http.StatusOK:
		return "", fmt.Errorf("librarian: exist-db error %d", status)
	}
	return body, nil
}

func (x *Exist) xquery(ctx context.Context, collection, query string, extra url.Values) (string, error) {
	form := url.Values{"_query": {query}}
	for k, v := range extra {
		form[k] = v
	}
	status, body, err := x.do(ctx, http.MethodPost, collection, strings.NewReader(form.Encode()),
		"application/x-www-form-urlencoded")
	if err != nil {
		return "", err
	}
	if status != http.StatusOK {
		return "", fmt.Errorf("librarian: exist-db error %d: %s", status, clip(body))
	}
	return body, nil
}

// Query runs an XQuery against the collection; the raw results come back.
func (x *Exist) Query(ctx context.Context, collection, query string) ([]Result, string, error) {
	body, err := x.xquery(ctx, collection, query, nil)
	return nil, body, err
}

// xqString quotes s as an XQuery string literal (the reference pasted it
// unescaped into the query).
func xqString(s string) string {
	return `"` + strings.NewReplacer(`"`, `""`, `&`, `&amp;`).Replace(s) + `"`
}

// Search runs a Lucene full-text query through eXist's ft module.
func (x *Exist) Search(ctx context.Context, collection, query string, n int) ([]Result, error) {
	xq := `import module namespace ft="http://exist-db.org/xquery/lucene"; ` +
		`for $hit in collection(` + xqString(collection) + `)//*[ft:query(., ` + xqString(query) + `)] ` +
		`return <result path="{document-uri(root($hit))}">{$hit}</result>`
	body, err := x.xquery(ctx, collection, xq, url.Values{"_howmany": {strconv.Itoa(n)}})
	if err != nil {
		return nil, err
	}
	return []Result{{Path: collection, Snippet: body}}, nil
}

func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}
