package xmlpipe

import "encoding/xml"

// Huh is the core error payload (seed 001): canned text plus the base64 of the
// bytes that failed. It travels as
// <huh xmlns="https://xml-pipeline.org/ns/core/v1"><error>…</error><original-attempt>…</original-attempt></huh>.
type Huh struct {
	XMLName xml.Name `xml:"https://xml-pipeline.org/ns/core/v1 huh"`
	// Error is one of the canned, generic texts (never raw validator output).
	Error string `xml:"error"`
	// OriginalAttempt holds the raw bytes that failed, truncated to
	// stage.MaxOriginalAttempt bytes.
	OriginalAttempt []byte `xml:"original-attempt,omitempty"`
}

// SystemError is the routing/delivery failure payload (seed 001). It travels in
// no namespace: <SystemError><code>routing</code><message>…</message><retry-allowed>true</retry-allowed></SystemError>.
type SystemError struct {
	XMLName xml.Name `xml:"SystemError"`
	// Code is the category: routing, validation or timeout.
	Code string `xml:"code"`
	// Message is a generic, non-revealing description.
	Message string `xml:"message"`
	// RetryAllowed tells the agent whether it may retry.
	RetryAllowed bool `xml:"retry-allowed"`
}
