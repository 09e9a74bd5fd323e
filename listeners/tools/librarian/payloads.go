package librarian

// Librarian stores, gets, queries and searches XML documents.
type Librarian struct {
	Op         string `enum:"store|get|query|search" doc:"store, get, query (XPath 1.0; XQuery with eXist-db) or search (full text)"`
	Collection string `xml:",omitempty" doc:"store/query/search: the collection (default /db/agents)"`
	Name       string `xml:",omitempty" doc:"store: the document's name"`
	Path       string `xml:",omitempty" doc:"get: the document's path (collection/name)"`
	Content    string `xml:",omitempty" doc:"store: the XML document"`
	Query      string `xml:",omitempty" doc:"query: the expression; search: the words"`
	NumResults int    `xml:",omitempty" doc:"search: how many results (default 10, max 100)"`
}

// LibrarianResult is the outcome.
type LibrarianResult struct {
	Op      string
	Path    string   `xml:",omitempty" doc:"store/get: the document's path"`
	Content string   `xml:",omitempty" doc:"get: the document; query with eXist-db: the raw results; query/search: says so when nothing matched"`
	Results []Result `xml:"Results>Result,omitempty" doc:"query/search: what matched"`
	Error   string   `xml:",omitempty"`
}

// Result is one query or search result.
type Result struct {
	Path    string
	Snippet string `xml:",omitempty" doc:"search: where the words occur; query: the matched value"`
}
