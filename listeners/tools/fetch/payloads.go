package fetch

// Fetch requests a URL over http or https.
type Fetch struct {
	URL    string `doc:"an http:// or https:// URL on a public host"`
	Method string `xml:",omitempty" enum:"GET|HEAD|POST|PUT|DELETE|PATCH|OPTIONS" doc:"default GET"`
	Body   string `xml:",omitempty" doc:"the request body"`
}

// FetchResult is the response, or why there is none.
type FetchResult struct {
	URL         string `doc:"the final URL, after redirects"`
	Status      int    `xml:",omitempty"`
	ContentType string `xml:",omitempty"`
	Body        string `xml:",omitempty" doc:"the body as text"`
	Truncated   bool   `xml:",omitempty" doc:"the body was cut at the size cap"`
	Error       string `xml:",omitempty" doc:"why the request was refused or failed"`
}
