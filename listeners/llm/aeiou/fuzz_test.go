package aeiou

import (
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// fuzzTokens returns the golden token outputs and their candidate lines
// (the seeds), and the set of lines that verify for the golden turn on a
// fresh verifier: the only strings the test keys ever signed for that turn.
func fuzzTokens(f *testing.F) (seeds []string, minted map[string]bool) {
	b, err := os.ReadFile(tokenGoldenPath)
	if err != nil {
		f.Fatal(err)
	}
	var tf tokenFile
	if err := json.Unmarshal(b, &tf); err != nil {
		f.Fatal(err)
	}
	keys := testKeys(f)
	minted = map[string]bool{}
	for _, c := range tf.Cases {
		for _, s := range c.Steps {
			seeds = append(seeds, s.Output)
			for l := range strings.SplitSeq(s.Output, "\n") {
				l = strings.TrimSuffix(l, "\r")
				seeds = append(seeds, l)
				v := NewVerifier(keys.Ring, NewReplayCache(0, 0), Config{}, fixedClock(testNow))
				if _, err := v.Verify(l, testTurn()); err == nil {
					minted[l] = true
				}
			}
		}
	}
	if len(minted) < 10 {
		f.Fatalf("only %d valid golden tokens", len(minted))
	}
	return seeds, minted
}

// FuzzVerify feeds arbitrary text to Verify (as one token) and to Decide (as
// a turn's output): neither may panic, every failure is a *VerifyError with
// a known reason, and nothing is accepted but a token the test keys signed
// for this turn, byte for byte.
func FuzzVerify(f *testing.F) {
	seeds, minted := fuzzTokens(f)
	for _, s := range seeds {
		f.Add(s)
	}
	keys := testKeys(f)
	turn := testTurn()
	f.Fuzz(func(t *testing.T, s string) {
		v := NewVerifier(keys.Ring, NewReplayCache(0, 0), Config{}, fixedClock(testNow))
		c, err := v.Verify(s, turn)
		if err == nil {
			if !minted[s] {
				t.Fatalf("accepted a token that was never minted: %q", s)
			}
			if c.SessionID != turn.SessionID || c.TurnIndex != turn.Index || c.TurnNonce != turn.Nonce || c.Action.rank() == 0 {
				t.Fatalf("accepted claims %+v", c)
			}
		} else {
			var ve *VerifyError
			if !errors.As(err, &ve) || !slices.Contains(Reasons(), ve.Reason) {
				t.Fatalf("error %v is not a *VerifyError with a known reason", err)
			}
		}
		v = NewVerifier(keys.Ring, NewReplayCache(0, 0), Config{}, fixedClock(testNow))
		d := v.Decide(turn, s)
		lines := strings.Split(s, "\n")
		for _, c := range d.Valid {
			if l := strings.TrimSuffix(lines[c.Line-1], "\r"); !minted[l] {
				t.Fatalf("Decide accepted line %d, never minted: %q", c.Line, l)
			}
		}
		for _, c := range d.Rejected {
			if !slices.Contains(Reasons(), c.Reason) || c.Line < 1 || c.Line > len(lines) {
				t.Fatalf("rejection %+v", c)
			}
		}
		if (d.Outcome == OutcomeMissing) != (len(d.Valid) == 0) || (d.Token == nil) != (len(d.Valid) == 0) {
			t.Fatalf("decision %+v", d)
		}
	})
}

// FuzzParseEnvelope feeds arbitrary bytes to ParseEnvelope: no panic; a
// failure is an *EnvelopeError wrapping a sentinel; an accepted envelope
// respects the limits and survives BuildEnvelope → ParseEnvelope unchanged.
func FuzzParseEnvelope(f *testing.F) {
	for _, c := range loadEnvelopeCases(f) {
		if !strings.HasSuffix(c.File, ".gz") {
			f.Add(readEnvelopeFile(f, c.File))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := ParseEnvelope(b)
		if err != nil {
			var ee *EnvelopeError
			if !errors.As(err, &ee) {
				t.Fatalf("error %v is not an *EnvelopeError", err)
			}
			for _, s := range envelopeSentinels {
				if errors.Is(err, s) {
					return
				}
			}
			t.Fatalf("error %v wraps no sentinel", err)
		}
		if len(e.UserData) > MaxSectionBytes || len(e.Actions) > MaxSectionBytes || len(e.Output) > MaxSectionBytes || len(e.Scratchpad) > MaxSectionBytes {
			t.Fatal("section over the limit accepted")
		}
		built, err := BuildEnvelope(e)
		if err != nil {
			t.Fatalf("BuildEnvelope of a parsed envelope: %v", err)
		}
		again, err := ParseEnvelope(built)
		if err != nil {
			t.Fatalf("reparse: %v", err)
		}
		if !sameSections(e, again) || len(again.Lints) != 0 {
			t.Fatalf("round trip changed the envelope")
		}
	})
}

// FuzzJCS feeds arbitrary bytes to Canonicalize: no panic; a failure is a
// *JSONError wrapping a sentinel; the canonical form is valid JSON, a fixed
// point (idempotent), and parses to the same value as the input.
func FuzzJCS(f *testing.F) {
	for _, c := range loadJCSCases(f) {
		f.Add(c.input(f))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := Canonicalize(b)
		if err != nil {
			var je *JSONError
			if !errors.As(err, &je) {
				t.Fatalf("error %v is not a *JSONError", err)
			}
			for _, s := range jsonSentinels {
				if errors.Is(err, s) {
					return
				}
			}
			t.Fatalf("error %v wraps no sentinel", err)
		}
		if !json.Valid(out) {
			t.Fatalf("canonical form is not JSON: %q", out)
		}
		again, err := Canonicalize(out)
		if err != nil || string(again) != string(out) {
			t.Fatalf("not idempotent: %q -> %q, %v", out, again, err)
		}
		v1, _ := ParseJSON(b)
		v2, err := ParseJSON(out)
		if err != nil || !reflect.DeepEqual(v1, v2) {
			t.Fatalf("round trip changed the value: %#v vs %#v (%v)", v1, v2, err)
		}
	})
}
