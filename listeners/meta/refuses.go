package meta

// Refuses reports whether the flags refuse c every question it may put to
// the core listener named listener (one of the Name* constants), whatever
// the question asks: a client offered the core listeners as tools (xmlpipe
// mcp) is not offered one it could never call. A name that is no core
// listener is not refused.
func (s *Service) Refuses(c Caller, listener string) bool {
	if !IsCoreListener(listener) {
		return false
	}
	if !s.flags.Enabled || c.Remote && !s.flags.AllowRemote {
		return true
	}
	switch listener {
	case NameRequestSchema:
		return !s.flags.SchemaRequests.allows(c)
	case NameRequestExample:
		return !s.flags.ExampleRequests.allows(c)
	case NameRequestPrompt:
		return !s.flags.PromptRequests.allows(c)
	}
	return !s.flags.AllowListCapabilities || !AccessAuthenticated.allows(c)
}
