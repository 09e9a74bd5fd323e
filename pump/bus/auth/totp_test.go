package auth

import (
	"testing"
	"time"
)

func TestMatchTOTP(t *testing.T) {
	const secret = "JBSWY3DPEHPK3PXP"
	now := t0
	cur := totpStep(now)
	tests := []struct {
		name     string
		code     string
		wantStep int64
		ok       bool
	}{
		{"current", codeAt(t, secret, now), cur, true},
		{"previous", codeAt(t, secret, now.Add(-30*time.Second)), cur - 1, true},
		{"next", codeAt(t, secret, now.Add(30*time.Second)), cur + 1, true},
		{"two back", codeAt(t, secret, now.Add(-60*time.Second)), 0, false},
		{"two ahead", codeAt(t, secret, now.Add(60*time.Second)), 0, false},
		{"five digits", codeAt(t, secret, now)[:5], 0, false},
		{"padded", " " + codeAt(t, secret, now), 0, false},
		{"not digits", "12a456", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			step, ok := matchTOTP(tt.code, secret, now)
			if ok != tt.ok || step != tt.wantStep {
				t.Fatalf("matchTOTP(%q) = %d, %v; want %d, %v", tt.code, step, ok, tt.wantStep, tt.ok)
			}
		})
	}
	if _, ok := matchTOTP(codeAt(t, secret, now), "", now); ok {
		t.Error("a code matched an empty secret")
	}
	// RFC 6238 appendix B, SHA1, time 59 → 94287082 (8 digits); the low six
	// digits are the 6-digit code.
	rfc := "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ" // "12345678901234567890"
	if step, ok := matchTOTP("287082", rfc, time.Unix(59, 0)); !ok || step != 1 {
		t.Errorf("RFC 6238 vector: step %d, ok %v", step, ok)
	}
}
