// Package codec encodes and decodes listener payloads: a Go struct ⇄ the payload
// element of an envelope, driven by the gen type model, so the bytes always
// match the XSD that gen derives from the same struct.
//
// Encoding is compact (no whitespace between elements) and always well-formed:
// every text and attribute value is escaped, invalid XML characters become
// U+FFFD, floats use a valid xs:double form (INF, -INF, NaN, shortest
// round-trip otherwise), times are RFC 3339 and bytes standard base64.
//
// Decoding uses a hand-written scanner over the payload's (exclusive C14N)
// bytes. Strings are kept exactly as sent; other values have their surrounding
// whitespace collapsed, as the XSD whitespace facet does, and a value that does
// not fit its Go type is an error. Unknown elements and attributes, repeated
// singular elements and missing required ones are errors too.
package codec
