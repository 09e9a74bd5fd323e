package search

// WebSearch asks a configured search provider.
type WebSearch struct {
	Query      string `doc:"what to search for"`
	NumResults int    `xml:",omitempty" doc:"how many results (1-20, default 5)"`
}

// WebSearchResult lists what the provider found.
type WebSearchResult struct {
	Query   string
	Results []Hit  `xml:"Results>Hit,omitempty"`
	Error   string `xml:",omitempty" doc:"why the search was refused or failed"`
}

// Hit is one search result.
type Hit struct {
	Title   string
	URL     string
	Snippet string `xml:",omitempty"`
}
