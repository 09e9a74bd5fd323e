package meta

// Caller is who asks a meta question, as the organism classifies the
// message's <from>.
type Caller struct {
	// Name is the sender's <from>.
	Name string
	// Admin marks an administrator (it passes every access level but none).
	Admin bool
	// Authenticated marks a caller the organism knows: a logged-in session,
	// one of its listeners, an authenticated federation peer.
	Authenticated bool
	// Remote marks a federation peer; it may ask only when
	// Flags.AllowRemote is set.
	Remote bool
	// Visible filters the capabilities the caller may see (a federation
	// peer sees only the exported ones); nil means all.
	Visible func(Capability) bool
}

// sees reports whether c may see capability k.
func (c Caller) sees(k Capability) bool {
	return c.Visible == nil || c.Visible(k)
}

// Callers classifies a message's sender. The organism supplies it.
type Callers interface {
	// Classify describes the sender whose <from> is from.
	Classify(from string) Caller
}

// CallersFunc adapts a function to Callers.
type CallersFunc func(from string) Caller

// Classify calls f.
func (f CallersFunc) Classify(from string) Caller { return f(from) }
