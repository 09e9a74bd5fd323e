package wire

// Frame types of the organism's governance: server → client events.
const (
	// TypeApproval: something began waiting for a human (Approval).
	TypeApproval = "approval"
	// TypeApprovalDecided: an approval was approved, denied or expired
	// (Approval, its Status says which).
	TypeApprovalDecided = "approval_decided"
	// TypeGuardianAlert: one sender's messages were refused repeatedly by
	// the constitution's rules (admins only).
	TypeGuardianAlert = "guardian_alert"
	// TypeHalted and TypeResumed: the emergency halt began or ended.
	TypeHalted  = "halted"
	TypeResumed = "resumed"
	// TypeRefusal: a listener of the conversation got a structured
	// refusal (a Failure whose Error is the refusal in one line).
	TypeRefusal = "refusal"
)

// ApprovalInfo describes an approval: a call (or a message a constitution
// rule sends to review) waiting for a human, or decided. It is the JSON of
// GET /api/v1/approvals too. ThreadID is the conversation (what TypeSent
// returned); Thread the thread the held message travels on; User who began
// the conversation (absent: the organism's own traffic).
type ApprovalInfo struct {
	ID            string   `json:"id"`
	Kind          string   `json:"kind"`
	ThreadID      string   `json:"thread_id"`
	Thread        string   `json:"thread,omitempty"`
	User          string   `json:"user,omitempty"`
	Agent         string   `json:"agent"`
	Target        string   `json:"target"`
	Payload       string   `json:"payload"`
	RequestReason string   `json:"request_reason,omitempty"`
	Rules         []string `json:"rules,omitempty"`
	CreatedAt     string   `json:"created_at"`
	ExpiresAt     string   `json:"expires_at,omitempty"`
	// Status is pending, approved, denied or expired.
	Status    string `json:"status"`
	DecidedBy string `json:"decided_by,omitempty"`
	Reason    string `json:"reason,omitempty"`
	DecidedAt string `json:"decided_at,omitempty"`
}

// Approval is TypeApproval or TypeApprovalDecided. The approval is nested:
// a frame's own "id" field names the request a reply answers.
type Approval struct {
	Head
	Approval ApprovalInfo `json:"approval"`
}

// GuardianAlert is TypeGuardianAlert.
type GuardianAlert struct {
	Head
	Sender        string   `json:"sender"`
	Count         int      `json:"count"`
	WindowSeconds float64  `json:"window_seconds"`
	Rules         []string `json:"rules,omitempty"`
	Timestamp     string   `json:"timestamp"`
}

// Halt is TypeHalted or TypeResumed: Scope is agents or all (halted), By
// who asked.
type Halt struct {
	Head
	Scope string `json:"scope,omitempty"`
	// Listener names the listener of a halt or resume of scope
	// "listener".
	Listener  string `json:"listener,omitempty"`
	By        string `json:"by"`
	Timestamp string `json:"timestamp"`
}
