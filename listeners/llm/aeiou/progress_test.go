package aeiou

import (
	"encoding/hex"
	"testing"
)

// TestDigestKnownAnswers pins the §9 formula (vectors from Python hashlib).
func TestDigestKnownAnswers(t *testing.T) {
	for _, tc := range []struct{ out, scr, want string }{
		{"hello\nworld", "", "e0e51b7a8bccecaa14c5b94db8e69933f035187eb83541832537c0be5b391944"},
		{"", "", "a038735ca1cca6bb4bc227de996b9fe097f0573b6c5c16fb4b71f9b3e8a52f26"},
	} {
		d := Digest(tc.out, tc.scr)
		if got := hex.EncodeToString(d[:]); got != tc.want {
			t.Errorf("Digest(%q, %q) = %s, want %s", tc.out, tc.scr, got, tc.want)
		}
	}
}

// TestDigestNormalisation checks what the digest ignores (line endings,
// trailing spaces, tokens) and what it does not.
func TestDigestNormalisation(t *testing.T) {
	keys := testKeys(t)
	m := testMinter(t, keys, fixedClock(testNow), 1)
	t1 := mustMint(t, m, testTurn(), ActionContinue).Token
	t2 := mustMint(t, m, testTurn(), ActionContinue).Token
	base := Digest("hello\nworld", "plan")
	same := []struct{ out, scr string }{
		{"hello\r\nworld", "plan"},
		{"hello\rworld", "plan"},
		{"hello  \nworld\t", "plan "},
		{"hello\n" + t1 + "\nworld", "plan"},
		{"hello\nworld\n" + t2, "plan"},
		{"hello\nworld " + t1, "plan"},
	}
	for _, s := range same {
		if Digest(s.out, s.scr) != base {
			t.Errorf("Digest(%q, %q) differs from the normalised form", s.out, s.scr)
		}
	}
	for _, s := range []struct{ out, scr string }{
		{"hello\nworld!", "plan"},
		{"hello\nworld", "plan2"},
		{"Hello\nworld", "plan"},
		{" hello\nworld", "plan"},
		{"hello\nworld", ""},
		{"hello\n\nworld", "plan"},
		{"hello\nworld\nSCR|plan", ""},
	} {
		if Digest(s.out, s.scr) == base {
			t.Errorf("Digest(%q, %q) equals the base digest", s.out, s.scr)
		}
	}
	// A broken token-like run is content, not a token.
	if Digest("x <<<NSMAG:V3:LOOP:abc", "") == Digest("x", "") {
		t.Error("a non-token run was stripped")
	}
}

// TestProgressGuard checks N=3: the third identical digest in a row trips.
func TestProgressGuard(t *testing.T) {
	p := NewProgress(0)
	a, b := Digest("a", ""), Digest("b", "")
	steps := []struct {
		d    [32]byte
		run  int
		halt bool
	}{
		{a, 1, false}, {a, 2, false}, {b, 1, false}, {b, 2, false}, {b, 3, true}, {b, 4, true}, {a, 1, false},
	}
	for i, s := range steps {
		run, halt := p.Observe(s.d)
		if run != s.run || halt != s.halt {
			t.Fatalf("step %d: run %d halt %v, want %d %v", i, run, halt, s.run, s.halt)
		}
	}
	p.Reset()
	if run, _ := p.Observe(a); run != 1 {
		t.Fatalf("after Reset run %d", run)
	}
}
