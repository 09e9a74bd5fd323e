package registry

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"
)

// refParseThreadID is the accepted wire form spelled out with uuid.Parse:
// what parseThreadID must agree with.
func refParseThreadID(s string) (uuid.UUID, bool) {
	if len(s) != 36 || strings.ToLower(s) != s {
		return uuid.UUID{}, false
	}
	u, err := uuid.Parse(s)
	if err != nil || u.Version() != 4 || u.Variant() != uuid.RFC4122 {
		return uuid.UUID{}, false
	}
	return u, true
}

// TestParseThreadID: only a lower-case, canonical version 4 RFC 4122 UUID
// is a thread id, parsed to the same bytes as uuid.Parse.
func TestParseThreadID(t *testing.T) {
	valid := "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b"
	tests := []struct {
		name string
		in   string
	}{
		{"valid", valid},
		{"valid, variant b", "6f1c2a3b-4d5e-4f60-bfff-9c0d1e2f3a4b"},
		{"minted", uuid.NewString()},
		{"upper case", strings.ToUpper(valid)},
		{"one upper-case digit", "6F1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b"},
		{"version 1", "6f1c2a3b-4d5e-1f60-8a7b-9c0d1e2f3a4b"},
		{"version 7", "6f1c2a3b-4d5e-7f60-8a7b-9c0d1e2f3a4b"},
		{"NCS variant", "6f1c2a3b-4d5e-4f60-7a7b-9c0d1e2f3a4b"},
		{"Microsoft variant", "6f1c2a3b-4d5e-4f60-ca7b-9c0d1e2f3a4b"},
		{"no dashes", "6f1c2a3b4d5e4f608a7b9c0d1e2f3a4b"},
		{"braces", "{6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b}"},
		{"urn", "urn:uuid:6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b"},
		{"dash misplaced", "6f1c2a3-b4d5e-4f60-8a7b-9c0d1e2f3a4b"},
		{"not hex", "6f1c2a3g-4d5e-4f60-8a7b-9c0d1e2f3a4b"},
		{"space", "6f1c2a3 -4d5e-4f60-8a7b-9c0d1e2f3a4b"},
		{"non-ASCII", "6f1c2a3\xe9-4d5e-4f60-8a7b-9c0d1e2f3a4"},
		{"short", valid[:35]},
		{"long", valid + "0"},
		{"empty", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, wantOK := refParseThreadID(tt.in)
			got, err := parseThreadID(tt.in)
			if gotOK := err == nil; gotOK != wantOK {
				t.Fatalf("parseThreadID(%q) error %v, want ok %v", tt.in, err, wantOK)
			}
			if err != nil && !errors.Is(err, ErrInvalidThreadID) {
				t.Errorf("parseThreadID(%q) error %v, want ErrInvalidThreadID", tt.in, err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("parseThreadID(%q) (-want +got):\n%s", tt.in, diff)
			}
			if err == nil {
				var b [36]byte
				formatThreadID(&b, got)
				if string(b[:]) != tt.in {
					t.Errorf("formatThreadID(parseThreadID(%q)) = %q", tt.in, b[:])
				}
			}
		})
	}
}

// FuzzParseThreadID checks parseThreadID against uuid.Parse on any input.
func FuzzParseThreadID(f *testing.F) {
	f.Add("6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b")
	f.Add("6F1C2A3B-4D5E-4F60-8A7B-9C0D1E2F3A4B")
	f.Add("6f1c2a3b4d5e4f608a7b9c0d1e2f3a4b")
	f.Fuzz(func(t *testing.T, s string) {
		want, wantOK := refParseThreadID(s)
		got, err := parseThreadID(s)
		if (err == nil) != wantOK || got != want {
			t.Fatalf("parseThreadID(%q) = %v, %v; want %v, ok %v", s, got, err, want, wantOK)
		}
	})
}

// BenchmarkParseThreadID measures parsing a thread id, which every
// registry call taking one does.
func BenchmarkParseThreadID(b *testing.B) {
	id := uuid.NewString()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := parseThreadID(id); err != nil {
			b.Fatal(err)
		}
	}
}
