package meta

// Access is who may ask one kind of meta question.
type Access string

// The access levels of the meta: flags.
const (
	// AccessAdmin allows admins only.
	AccessAdmin Access = "admin"
	// AccessAuthenticated allows any authenticated caller (admins too).
	AccessAuthenticated Access = "authenticated"
	// AccessNone allows nobody.
	AccessNone Access = "none"
)

// allows reports whether c passes the access level a. An unknown level
// allows nobody (fail closed).
func (a Access) allows(c Caller) bool {
	switch a {
	case AccessAdmin:
		return c.Admin
	case AccessAuthenticated:
		return c.Admin || c.Authenticated
	}
	return false
}

// Flags are the meta: flags of organism.yaml (a mirror of config.Meta, so
// this package does not import the configuration).
type Flags struct {
	// Enabled turns meta introspection on; when false every question is
	// refused.
	Enabled bool
	// AllowListCapabilities permits list-capabilities, to authenticated
	// callers.
	AllowListCapabilities bool
	// SchemaRequests, ExampleRequests and PromptRequests govern
	// request-schema, request-example and request-prompt.
	SchemaRequests  Access
	ExampleRequests Access
	PromptRequests  Access
	// AllowRemote lets federation peers (Caller.Remote) ask at all.
	AllowRemote bool
}
