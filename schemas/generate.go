package schemas

// The per-listener schemas (schemas/<listener>/v1.xsd, example.xml, prompt.md)
// are derived from the Go payload types of the compiled-in listeners; a test in
// listeners/catalog fails when these files are stale.
//go:generate go run ../cmd/xmlpipe gen -out .
