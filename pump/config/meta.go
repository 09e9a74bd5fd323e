package config

// Meta is the meta: section: who may introspect the organism.
type Meta struct {
	// Enabled turns meta introspection on (default true).
	Enabled bool `yaml:"enabled"`
	// AllowListCapabilities permits list-capabilities (default true).
	AllowListCapabilities bool `yaml:"allow_list_capabilities"`
	// AllowSchemaRequests governs request-schema (default authenticated).
	AllowSchemaRequests Access `yaml:"allow_schema_requests"`
	// AllowExampleRequests governs request-example (default authenticated).
	AllowExampleRequests Access `yaml:"allow_example_requests"`
	// AllowPromptRequests governs request-prompt (default authenticated).
	AllowPromptRequests Access `yaml:"allow_prompt_requests"`
	// AllowRemote lets federation peers query meta (default false).
	AllowRemote bool `yaml:"allow_remote"`
}

// Access is who may make a kind of meta request.
type Access string

// The meta access levels.
const (
	// AccessAdmin allows admins only.
	AccessAdmin Access = "admin"
	// AccessAuthenticated allows any logged-in user (the default).
	AccessAuthenticated Access = "authenticated"
	// AccessNone allows nobody.
	AccessNone Access = "none"
)

// Valid reports whether a is a known access level.
func (a Access) Valid() bool {
	return a == AccessAdmin || a == AccessAuthenticated || a == AccessNone
}
