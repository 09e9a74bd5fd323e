package xmltools

// XMLToJSON converts an XML document to JSON.
type XMLToJSON struct {
	XML      string `doc:"the XML document"`
	KeepRoot bool   `xml:",omitempty" doc:"wrap the result as {root-tag: …} (default: the root's content only)"`
}

// XMLToJSONResult is the JSON, or why there is none.
type XMLToJSONResult struct {
	JSON  string `xml:",omitempty"`
	Error string `xml:",omitempty"`
}

// JSONToXML converts a JSON value to XML.
type JSONToXML struct {
	JSON    string `doc:"the JSON value; \"@key\" members become attributes, \"#text\" text, arrays repeated elements"`
	RootTag string `xml:",omitempty" doc:"the root element's name (default data)"`
	Pretty  bool   `xml:",omitempty" doc:"indent the output"`
}

// JSONToXMLResult is the XML, or why there is none.
type JSONToXMLResult struct {
	XML   string `xml:",omitempty"`
	Error string `xml:",omitempty"`
}

// XMLExtract evaluates an XPath 1.0 expression on a document.
type XMLExtract struct {
	XML        string      `doc:"the XML document"`
	XPath      string      `doc:"an XPath 1.0 expression"`
	Namespaces []Namespace `xml:"Namespaces>Namespace,omitempty" doc:"prefixes the expression uses"`
}

// Namespace binds a prefix for XMLExtract.
type Namespace struct {
	Prefix string
	URI    string
}

// XMLExtractResult is the expression's value.
type XMLExtractResult struct {
	Type    string  `xml:",omitempty" doc:"nodeset, boolean, number or string"`
	Count   int     `doc:"how many nodes matched (nodeset)"`
	Matches []Match `xml:"Matches>Match,omitempty"`
	Value   string  `xml:",omitempty" doc:"the value of a boolean, number or string result"`
	Error   string  `xml:",omitempty"`
}

// Match is one matched node.
type Match struct {
	Kind      string `doc:"element, attribute, text, comment, pi, namespace or document"`
	Name      string `xml:",omitempty"`
	Namespace string `xml:",omitempty"`
	Value     string `doc:"the node's string-value"`
	XML       string `xml:",omitempty" doc:"an element's canonical XML"`
}
