package xmlpipe

// Encoded is a payload already encoded as XML: the payload element of Type
// (declaring xmlns="" when Type has no namespace), as codec.AppendJSON writes
// it with EmptyNS. Send or Respond one to keep exactly the elements written —
// presence, not value, decides what a JSON payload holds, and decoding it
// into a Go value and encoding that again would drop an empty optional
// element. The pump reads and validates it like any other payload.
type Encoded struct {
	// Type is the payload contract the XML is written in.
	Type *PayloadType
	// XML is the payload element. It is handed over: nothing may modify it
	// once sent.
	XML []byte
}
