package aeiou

import (
	"slices"
	"strings"
	"testing"
)

// TestDecidePresentation covers how a valid token is presented: only a bare
// line counts; everything else is ignored with a reason.
func TestDecidePresentation(t *testing.T) {
	keys := testKeys(t)
	turn := testTurn()
	tok := mustMint(t, testMinter(t, keys, fixedClock(testNow), 1), turn, ActionDone).Token
	for _, tc := range []struct {
		name   string
		output string
		want   Outcome
		reason Reason
	}{
		{"bare", tok, OutcomeDone, ""},
		{"bare after fence closed", "```go\nx := 1\n```\n" + tok, OutcomeDone, ""},
		{"tilde fence", "~~~\n" + tok + "\n~~~", OutcomeMissing, ReasonFenced},
		{"fence with info", "```text\n" + tok + "\n```", OutcomeMissing, ReasonFenced},
		{"unclosed fence", "```\n" + tok, OutcomeMissing, ReasonFenced},
		{"longer fence not closed by shorter", "````\n```\n" + tok + "\n````", OutcomeMissing, ReasonFenced},
		{"tilde fence not closed by backticks", "~~~\n```\n" + tok + "\n~~~\n", OutcomeMissing, ReasonFenced},
		{"inline triple backticks", "```" + tok + "```", OutcomeMissing, ReasonBackticked},
		{"curly quotes", "“" + tok + "”", OutcomeMissing, ReasonQuoted},
		{"guillemets", "«" + tok + "»", OutcomeMissing, ReasonQuoted},
		{"quote after", tok + `"`, OutcomeMissing, ReasonQuoted},
		{"blockquote indented", "   > " + tok, OutcomeMissing, ReasonQuoted},
		{"two on a line", tok + tok, OutcomeMissing, ReasonEmbedded},
		{"tab before", "\t" + tok, OutcomeMissing, ReasonEmbedded},
		{"markdown bold", "**" + tok + "**", OutcomeMissing, ReasonEmbedded},
		{"cut short", tok[:len(tok)-3], OutcomeMissing, ReasonSplit},
		{"cut at the end", "done\n" + tok[:50], OutcomeMissing, ReasonSplit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := NewVerifier(keys.Ring, NewReplayCache(0, 0), Config{}, fixedClock(testNow))
			d := v.Decide(turn, tc.output)
			if d.Outcome != tc.want {
				t.Fatalf("outcome %v, want %v (rejected %+v)", d.Outcome, tc.want, d.Rejected)
			}
			if tc.reason == "" {
				if len(d.Rejected) != 0 {
					t.Fatalf("rejected %+v", d.Rejected)
				}
				return
			}
			if len(d.Rejected) != 1 || d.Rejected[0].Reason != tc.reason {
				t.Fatalf("rejected %+v, want one %s", d.Rejected, tc.reason)
			}
		})
	}
}

// TestDecideConsumesOnlyValid checks that rejected candidates do not burn
// their jti: a token ignored for being quoted still decides when it then
// appears bare.
func TestDecideConsumesOnlyValid(t *testing.T) {
	keys := testKeys(t)
	turn := testTurn()
	tok := mustMint(t, testMinter(t, keys, fixedClock(testNow), 1), turn, ActionContinue).Token
	v := NewVerifier(keys.Ring, NewReplayCache(0, 0), Config{}, fixedClock(testNow))
	d := v.Decide(turn, "I will emit `"+tok+"`:\n"+tok)
	if d.Outcome != OutcomeContinue || d.Line != 2 || len(d.Rejected) != 1 || d.Rejected[0].Reason != ReasonBackticked {
		t.Fatalf("decision %+v", d)
	}
	if d.Token == nil || d.Token.Action != ActionContinue {
		t.Fatalf("token %+v", d.Token)
	}
}

// TestOutcomeNames covers the log names of outcomes.
func TestOutcomeNames(t *testing.T) {
	for o, want := range map[Outcome][2]string{
		OutcomeContinue:   {"continue", ""},
		OutcomeDone:       {"done", ""},
		OutcomeAbort:      {"abort", ""},
		OutcomeMissing:    {"halt", ErrCodeTokenMissing},
		OutcomeNoProgress: {"halt", ErrCodeNoProgress},
	} {
		if o.String() != want[0] || o.HaltCode() != want[1] {
			t.Errorf("%d: %s %s", o, o.String(), o.HaltCode())
		}
	}
	if len(Reasons()) != 26 || slices.Contains(Reasons(), "") {
		t.Fatalf("Reasons() = %v", Reasons())
	}
}

// TestDecideTooManyCandidates checks the bound on verified lines per turn.
func TestDecideTooManyCandidates(t *testing.T) {
	keys := testKeys(t)
	turn := testTurn()
	m := testMinter(t, keys, fixedClock(testNow), 1)
	forged := strings.Replace(mustMint(t, m, turn, ActionDone).Token, "LOOP:e", "LOOP:f", 1)
	valid := mustMint(t, m, turn, ActionContinue).Token
	out := strings.Repeat(forged+"\n", MaxCandidates) + valid
	v := NewVerifier(keys.Ring, NewReplayCache(0, 0), Config{}, fixedClock(testNow))
	d := v.Decide(turn, out)
	if d.Outcome != OutcomeMissing || len(d.Rejected) != MaxCandidates+1 || d.Rejected[MaxCandidates].Reason != ReasonTooMany {
		t.Fatalf("outcome %v, %d rejected, last %+v", d.Outcome, len(d.Rejected), d.Rejected[len(d.Rejected)-1])
	}
	if d := v.Decide(turn, strings.Repeat(forged+"\n", MaxCandidates-1)+valid); d.Outcome != OutcomeContinue {
		t.Fatalf("within the bound: %v", d.Outcome)
	}
}

// TestStripTokens checks that token lines go and everything else stays.
func TestStripTokens(t *testing.T) {
	tok := mustMint(t, testMinter(t, testKeys(t), fixedClock(testNow), 1), testTurn(), ActionDone).Token
	for in, want := range map[string]string{
		"Answer.\n" + tok + "\n":                       "Answer.",
		"Answer.\r\n" + tok + "\r\n":                   "Answer.",
		"  indented\n\n" + tok:                         "  indented",
		tok + "\nafter":                                "after",
		"quoted `" + tok + "` stays\n" + tok:           "quoted `" + tok + "` stays",
		"no token at all\n":                            "no token at all\n",
		"a\n<<<NSMAG:V3:LOOP:broken\nb\n" + tok + "\n": "a\n<<<NSMAG:V3:LOOP:broken\nb",
	} {
		if got := StripTokens(in); got != want {
			t.Errorf("StripTokens(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestStripTokensAtLineEdges: a token written at the start or the end of a
// line of text (misplaced: it decides nothing) goes from the answer too,
// with the space that set it off; one inside a line, quoted, backticked,
// in a quote block or in a code block stays as written (it is only logged).
func TestStripTokensAtLineEdges(t *testing.T) {
	tok := mustMint(t, testMinter(t, testKeys(t), fixedClock(testNow), 1), testTurn(), ActionDone).Token
	for _, tc := range []struct {
		name, in, want string
	}{
		{"at the end of the last line", "Done. " + tok, "Done."},
		{"at the end, then a newline", "Done. " + tok + "\n", "Done."},
		{"at the end, CRLF", "Done. " + tok + "\r\nNext.", "Done.\r\nNext."},
		{"at the end, trailing spaces", "Done. " + tok + "  \nNext.", "Done.\nNext."},
		{"glued to the end", "Done." + tok, "Done."},
		{"two at the end", "Done. " + tok + " " + tok, "Done."},
		{"at the start", tok + " Done.", "Done."},
		{"at the start, indented", "  " + tok + " Done.", "  Done."},
		{"at both edges", tok + " Done. " + tok, "Done."},
		{"on a line before others", "Step one. " + tok + "\nStep two.", "Step one.\nStep two."},
		{"alone but indented", "Answer.\n  " + tok, "Answer."},
		{"inside a line stays", "Use " + tok + " here.", "Use " + tok + " here."},
		{"quoted stays", `Done. "` + tok + `"`, `Done. "` + tok + `"`},
		{"backticked line stays", "Run `x`. " + tok, "Run `x`. " + tok},
		{"quote block stays", "> Done. " + tok, "> Done. " + tok},
		{"code block stays", "```\nDone. " + tok + "\n```", "```\nDone. " + tok + "\n```"},
		{"after a closed code block", "```\nx\n```\nDone. " + tok, "```\nx\n```\nDone."},
		{"broken token stays", "Done. <<<NSMAG:V3:LOOP:broken>>>", "Done. <<<NSMAG:V3:LOOP:broken>>>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := StripTokens(tc.in); got != tc.want {
				t.Errorf("StripTokens(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
