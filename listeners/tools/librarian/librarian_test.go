package librarian

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/listeners/tools"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

func call(t *testing.T, tool *Tool, p Librarian) *LibrarianResult {
	t.Helper()
	resp, err := tool.Handle(context.Background(), &p, xmlpipe.Metadata{From: "agent"})
	if err != nil {
		t.Fatal(err)
	}
	return resp.(*xmlpipe.RespondResponse).Payload.(*LibrarianResult)
}

func TestEmbedded(t *testing.T) {
	e, err := OpenEmbedded(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	tool := &Tool{Embedded: e, Policy: tools.Fixed(tools.Config{MaxBytes: 4096})}
	docs := map[string]string{
		"whales.xml": `<note><title>Whales</title><body>The blue whale is the largest animal.</body></note>`,
		"cats.xml":   `<note><title>Cats</title><body>Cats sleep most of the day.</body></note>`,
	}
	for name, c := range docs {
		if r := call(t, tool, Librarian{Op: "store", Collection: "notes", Name: name, Content: c}); r.Error != "" ||
			r.Path != "/db/agents/notes/"+name {
			t.Fatalf("store %s: %+v", name, r)
		}
	}
	call(t, tool, Librarian{Op: "store", Collection: "/db/other", Name: "x.xml", Content: `<note><body>whale elsewhere</body></note>`})
	if r := call(t, tool, Librarian{Op: "get", Path: "/db/agents/notes/cats.xml"}); r.Content != docs["cats.xml"] {
		t.Fatalf("get: %+v", r)
	}
	if r := call(t, tool, Librarian{Op: "get", Path: "notes/cats.xml"}); r.Content != docs["cats.xml"] {
		t.Fatalf("get relative: %+v", r)
	}
	r := call(t, tool, Librarian{Op: "search", Collection: "notes", Query: "whale"})
	if r.Error != "" || len(r.Results) != 1 || r.Results[0].Path != "/db/agents/notes/whales.xml" || !strings.Contains(r.Results[0].Snippet, "[whale]") {
		t.Fatalf("search: %+v", r)
	}
	if r := call(t, tool, Librarian{Op: "search", Collection: "/db", Query: "whale"}); len(r.Results) != 2 {
		t.Fatalf("search below /db: %+v", r)
	}
	r = call(t, tool, Librarian{Op: "query", Collection: "notes", Query: "//title"})
	if r.Error != "" || len(r.Results) != 2 || r.Results[0].Snippet != "<title>Cats</title>" {
		t.Fatalf("query: %+v", r)
	}
	// FTS5 syntax in the words is matched literally, not interpreted.
	if r := call(t, tool, Librarian{Op: "search", Query: `whale" OR "cats`}); r.Error != "" {
		t.Fatalf("quoted search: %+v", r)
	}
	for _, tc := range []struct {
		p    Librarian
		want string
	}{
		{Librarian{Op: "store", Name: "bad.xml", Content: "<a>"}, "not a well-formed XML document"},
		{Librarian{Op: "store", Name: "../x", Content: "<a/>"}, "bad collection or document name"},
		// A store given the get's Path instead of a Name says which field it
		// needs (it read `document name ""`).
		{Librarian{Op: "store", Path: "a.xml", Content: "<a/>"}, "store needs Name (the document's name; Path is get's)"},
		{Librarian{Op: "get"}, "get needs Path (collection/name)"},
		{Librarian{Op: "store", Collection: "/db/../etc", Name: "x", Content: "<a/>"}, "bad collection or document name"},
		{Librarian{Op: "store", Name: "big.xml", Content: "<a>" + strings.Repeat("x", 5000) + "</a>"}, "max: 4096"},
		{Librarian{Op: "get", Path: "/db/agents/nope.xml"}, "not found"},
		{Librarian{Op: "query", Query: "//["}, "xpath"},
		{Librarian{Op: "search", Query: "  "}, "empty search"},
		{Librarian{Op: "drop"}, "unknown op"},
	} {
		if r := call(t, tool, tc.p); !strings.Contains(r.Error, tc.want) {
			t.Errorf("%+v: error %q, want %q", tc.p, r.Error, tc.want)
		}
	}
}

func TestExist(t *testing.T) {
	stored := map[string]string{}
	var lastQuery url.Values
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "admin" || p != "pw" {
			http.Error(w, "auth", http.StatusUnauthorized)
			return
		}
		p := strings.TrimPrefix(r.URL.Path, "/exist/rest")
		switch r.Method {
		case http.MethodPut:
			b, _ := io.ReadAll(r.Body)
			stored[p] = string(b)
			w.WriteHeader(http.StatusCreated)
		case http.MethodGet:
			c, ok := stored[p]
			if !ok {
				http.NotFound(w, r)
				return
			}
			_, _ = io.WriteString(w, c)
		case http.MethodPost:
			_ = r.ParseForm()
			lastQuery = r.PostForm
			_, _ = io.WriteString(w, "<exist:result hits=\"1\"/>")
		}
	}))
	defer srv.Close()
	tool := &Tool{Policy: tools.Fixed(tools.Config{URL: srv.URL + "/exist/rest", Username: "admin", Password: "pw"})}
	if r := call(t, tool, Librarian{Op: "store", Name: "a.xml", Content: "<a/>"}); r.Error != "" || stored["/db/agents/a.xml"] != "<a/>" {
		t.Fatalf("store: %+v %v", r, stored)
	}
	if r := call(t, tool, Librarian{Op: "get", Path: "/db/agents/a.xml"}); r.Content != "<a/>" {
		t.Fatalf("get: %+v", r)
	}
	if r := call(t, tool, Librarian{Op: "get", Path: "/db/agents/zz.xml"}); !strings.Contains(r.Error, "not found") {
		t.Fatalf("get missing: %+v", r)
	}
	if r := call(t, tool, Librarian{Op: "query", Query: "count(//a)"}); r.Error != "" || !strings.Contains(r.Content, "exist:result") ||
		lastQuery.Get("_query") != "count(//a)" {
		t.Fatalf("query: %+v %v", r, lastQuery)
	}
	if r := call(t, tool, Librarian{Op: "search", Query: `x") or true() or ("`, NumResults: 3}); r.Error != "" ||
		!strings.Contains(lastQuery.Get("_query"), `ft:query(., "x"") or true() or (""")`) || lastQuery.Get("_howmany") != "3" {
		t.Fatalf("search escapes: %+v %q", r, lastQuery.Get("_query"))
	}
	bad := &Tool{Policy: tools.Fixed(tools.Config{URL: srv.URL + "/exist/rest", Username: "admin", Password: "wrong"})}
	if r := call(t, bad, Librarian{Op: "store", Name: "a.xml", Content: "<a/>"}); !strings.Contains(r.Error, "exist-db error 401") {
		t.Fatalf("auth: %+v", r)
	}
}
