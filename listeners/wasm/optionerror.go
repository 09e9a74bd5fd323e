package wasm

// OptionError is an error of Open about one of its options, named by Key
// as a listener's configuration spells it — "module" (the file, or its
// describe export), "xsd", "payload" or "response" — so the caller can
// place it at that key. Its message does not name the listener: the caller
// does, once.
type OptionError struct {
	// Key is the option the error is about.
	Key string
	// Err is what is wrong with it.
	Err error
}

// Error returns "key: what is wrong".
func (e *OptionError) Error() string { return e.Key + ": " + e.Err.Error() }

// Unwrap returns Err.
func (e *OptionError) Unwrap() error { return e.Err }
