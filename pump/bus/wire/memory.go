package wire

// MemoryInfo is one consented memory of an agent with memory, as GET
// /api/v1/memory lists it: whose it is, which agent asked to remember it,
// what it holds and the consent that let it in (an approval id, or
// "policy:always").
type MemoryInfo struct {
	ID       string   `json:"id"`
	User     string   `json:"user"`
	Agent    string   `json:"agent"`
	Content  string   `json:"content"`
	Tags     []string `json:"tags,omitempty"`
	Consent  string   `json:"consent"`
	ThreadID string   `json:"thread_id,omitempty"`
	Thread   string   `json:"thread,omitempty"`
	// CreatedAt is RFC 3339 (UTC).
	CreatedAt string `json:"created_at"`
}
