package llm

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/xml-pipeline/xmlpipe/listeners/llm/aeiou"
)

// funcModel is a Chatter whose replies a function computes from the
// request (the n-th, from 0); it checks and keeps every request.
type funcModel struct {
	t     testing.TB
	mu    sync.Mutex
	reply func(n int, r Request) Reply
	reqs  []Request
}

func (m *funcModel) Chat(_ context.Context, r Request) (Reply, error) {
	if err := r.Validate(); err != nil {
		m.t.Errorf("the agent sent an invalid request: %v", err)
		return Reply{}, err
	}
	m.mu.Lock()
	n := len(m.reqs)
	m.reqs = append(m.reqs, r)
	m.mu.Unlock()
	return m.reply(n, r), nil
}

func (m *funcModel) requests() []Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Request(nil), m.reqs...)
}

// lastMessage is the request's last message.
func lastMessage(r Request) Message { return r.Messages[len(r.Messages)-1] }

// magicResults are the results of the aeiou_magic calls at the end of the
// request (the latest reply's calls), in call order.
func magicResults(r Request) []Message {
	var out []Message
	for i := len(r.Messages) - 1; i >= 0 && r.Messages[i].Role == Tool; i-- {
		if r.Messages[i].ToolName == aeiou.ToolName {
			out = append([]Message{r.Messages[i]}, out...)
		}
	}
	return out
}

// magicCall is a reply calling aeiou_magic with action.
func magicCall(id, action string) ToolCall {
	return toolCall(id, aeiou.ToolName, `{"kind":"LOOP","payload":{"action":"`+action+`"}}`)
}

// loopAgent is a loopRig whose agent runs under loop control with counters.
func loopAgent(t *testing.T, keys *aeiou.Keys, reply func(n int, r Request) Reply) (*loopRig, *funcModel, *aeiou.Counters) {
	t.Helper()
	r := newLoopRig(t, Reply{Content: "unused"})
	m := &funcModel{t: t, reply: reply}
	counters := &aeiou.Counters{}
	host, err := aeiou.New(aeiou.Options{Keys: keys, Observer: counters, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	r.a.LLM, r.a.LoopControl = m, host
	return r, m, counters
}

// TestLoopControlContinueThenDone: the model gets aeiou_magic and the rules;
// a continue token asks it again with a note, a done token ends the turn
// with the answer, tokens stripped.
func TestLoopControlContinueThenDone(t *testing.T) {
	r, m, counters := loopAgent(t, nil, func(n int, req Request) Reply {
		switch n {
		case 0:
			return Reply{ToolCalls: []ToolCall{magicCall("m1", "continue")}}
		case 1:
			return Reply{Content: "Step one is done.\n" + magicResults(req)[0].Content}
		case 2:
			return Reply{ToolCalls: []ToolCall{magicCall("m2", "done")}}
		}
		return Reply{Content: "The answer is 42.\n" + magicResults(req)[0].Content}
	})
	if got := answerText(r.deliver("console", "what is 6*7?", "")); got != "The answer is 42." {
		t.Fatalf("answer %q", got)
	}
	reqs := m.requests()
	if len(reqs) != 4 {
		t.Fatalf("%d model calls, want 4", len(reqs))
	}
	var offered, rules bool
	for _, s := range reqs[0].Tools {
		offered = offered || s.Name == aeiou.ToolName
	}
	for _, msg := range reqs[0].Messages {
		rules = rules || msg.Role == System && msg.Content == aeiou.Rules
	}
	if !offered || !rules {
		t.Fatalf("tool offered %v, rules in the prompt %v", offered, rules)
	}
	if last := lastMessage(reqs[2]); last.Role != User || !strings.Contains(last.Content, "You chose continue (turn 1)") {
		t.Fatalf("after continue the model saw %+v", last)
	}
	if tok := magicResults(reqs[1])[0].Content; !aeiou.IsTokenSyntax(tok) {
		t.Fatalf("magic result %q is not a token", tok)
	}
	snap := counters.Snapshot()
	if snap.Decisions["continue"] != 1 || snap.Decisions["done"] != 1 || snap.Mints != 2 || len(snap.Failures) != 0 {
		t.Fatalf("counters %+v", snap)
	}
	if r.a.loops.get("t") != nil {
		t.Fatal("the session outlived its turn")
	}
}

// TestLoopControlIgnoresForgedAndQuotedTokens: a hand-made token and a
// quoted real one decide nothing: the answer is delivered (the missing
// token's mapping) and each is counted with its reason.
func TestLoopControlIgnoresForgedAndQuotedTokens(t *testing.T) {
	var forged string
	r, _, counters := loopAgent(t, nil, func(n int, req Request) Reply {
		if n == 0 {
			return Reply{ToolCalls: []ToolCall{magicCall("m1", "continue")}}
		}
		tok := magicResults(req)[0].Content
		forged = tok[:len(tok)-8] + "AAAAA>>>" // the signature altered
		return Reply{Content: "Here it is.\n\"" + tok + "\"\n" + forged}
	})
	got := answerText(r.deliver("console", "go", ""))
	if !strings.HasPrefix(got, "Here it is.") || strings.Contains(got, forged) {
		t.Fatalf("answer %q", got)
	}
	snap := counters.Snapshot()
	if snap.Decisions["halt/ERR_TOKEN_MISSING"] != 1 || snap.Failures[aeiou.ReasonQuoted] != 1 ||
		snap.Failures[aeiou.ReasonBadSignature]+snap.Failures[aeiou.ReasonMalformed] != 1 {
		t.Fatalf("counters %+v", snap)
	}
}

// TestLoopControlRefusesReplayedTokens: a token of an earlier turn does not
// verify in the next one, and a token written twice decides once.
func TestLoopControlRefusesReplayedTokens(t *testing.T) {
	var first string
	r, _, counters := loopAgent(t, nil, func(n int, req Request) Reply {
		switch n {
		case 0:
			return Reply{ToolCalls: []ToolCall{magicCall("m1", "continue")}}
		case 1:
			first = magicResults(req)[0].Content
			return Reply{Content: "Half way.\n" + first}
		}
		return Reply{Content: "Done, I think.\n" + first} // turn 1 replays turn 0's token
	})
	if got := answerText(r.deliver("console", "go", "")); got != "Done, I think." {
		t.Fatalf("answer %q", got)
	}
	snap := counters.Snapshot()
	if snap.Decisions["continue"] != 1 || snap.Decisions["halt/ERR_TOKEN_MISSING"] != 1 ||
		snap.Failures[aeiou.ReasonWrongTurn]+snap.Failures[aeiou.ReasonWrongNonce]+snap.Failures[aeiou.ReasonReplayed] != 1 {
		t.Fatalf("counters %+v", snap)
	}

	r2, _, counters2 := loopAgent(t, nil, func(n int, req Request) Reply {
		if n == 0 {
			return Reply{ToolCalls: []ToolCall{magicCall("m1", "done")}}
		}
		tok := magicResults(req)[0].Content
		return Reply{Content: "Twice.\n" + tok + "\n" + tok}
	})
	if got := answerText(r2.deliver("console", "go", "")); got != "Twice." {
		t.Fatalf("answer %q", got)
	}
	if snap := counters2.Snapshot(); snap.Decisions["done"] != 1 || snap.Failures[aeiou.ReasonReplayed] != 1 {
		t.Fatalf("counters %+v", snap)
	}
}

// TestLoopControlAbortWinsOverDone: with a valid done and a valid abort in
// the answer, in either order, the turn aborts and the caller learns why.
func TestLoopControlAbortWinsOverDone(t *testing.T) {
	r, _, counters := loopAgent(t, nil, func(n int, req Request) Reply {
		if n == 0 {
			return Reply{ToolCalls: []ToolCall{magicCall("m1", "abort"), magicCall("m2", "done")}}
		}
		res := magicResults(req)
		return Reply{Content: "I must stop: the data is gone.\n" + res[0].Content + "\n" + res[1].Content}
	})
	got := answerText(r.deliver("console", "go", ""))
	if got != "[mathbot halted: aborted by its loop control token: I must stop: the data is gone.]" {
		t.Fatalf("answer %q", got)
	}
	if snap := counters.Snapshot(); snap.Decisions["abort"] != 1 || snap.Lints[aeiou.LintMultiTokens] != 1 {
		t.Fatalf("counters %+v", snap)
	}
}

// TestLoopControlProgressGuard: a model that asks to continue with the
// same output every turn is halted by the §9 digest on the third.
func TestLoopControlProgressGuard(t *testing.T) {
	r, m, counters := loopAgent(t, nil, func(n int, req Request) Reply {
		if res := magicResults(req); len(res) > 0 {
			return Reply{Content: "Still thinking.\n" + res[0].Content}
		}
		return Reply{ToolCalls: []ToolCall{magicCall(fmt.Sprintf("m%d", n), "continue")}}
	})
	got := answerText(r.deliver("console", "go", ""))
	if got != "[mathbot halted: no progress (ERR_NO_PROGRESS): the same output 3 turns in a row]" {
		t.Fatalf("answer %q", got)
	}
	if n := len(m.requests()); n != 6 {
		t.Fatalf("%d model calls, want 6 (three turns of a magic call and an answer)", n)
	}
	if snap := counters.Snapshot(); snap.Decisions["continue"] != 2 || snap.Decisions["halt/ERR_NO_PROGRESS"] != 1 {
		t.Fatalf("counters %+v", snap)
	}
}

// failingSigner is a key service that is down.
type failingSigner struct{ kid string }

func (s failingSigner) KeyID() string { return s.kid }
func (failingSigner) Sign([]byte) ([]byte, error) {
	return nil, errors.New("key service unavailable")
}

// brokenKeys returns keys whose primary signer fails, and whose fallback
// fails too when both is set.
func brokenKeys(t *testing.T, both bool) *aeiou.Keys {
	t.Helper()
	pub, _, _ := ed25519.GenerateKey(nil)
	fb, err := aeiou.GenerateEd25519("fallback-1")
	if err != nil {
		t.Fatal(err)
	}
	var fallback aeiou.Signer = fb
	if both {
		fallback = failingSigner{kid: "fallback-1"}
	}
	keys, err := aeiou.NewKeys(failingSigner{kid: "primary-1"}, aeiou.VerifyKey{ID: "primary-1", Alg: aeiou.AlgEd25519, Public: pub},
		fallback, fb.VerifyKey())
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// TestLoopControlFallbackSigner: with the primary signer down, the magic
// tool still mints an abort (fallback) token, and it stops the loop; with
// both down the loop halts with ERR_MAGIC_TOOL_INTERNAL and no token is
// ever written by the host.
func TestLoopControlFallbackSigner(t *testing.T) {
	r, _, counters := loopAgent(t, brokenKeys(t, false), func(n int, req Request) Reply {
		if n == 0 {
			return Reply{ToolCalls: []ToolCall{magicCall("m1", "done")}}
		}
		return Reply{Content: "Finished.\n" + magicResults(req)[0].Content}
	})
	got := answerText(r.deliver("console", "go", ""))
	if got != "[mathbot halted: aborted by its loop control token (minted by the fallback signer): Finished.]" {
		t.Fatalf("answer %q", got)
	}
	if snap := counters.Snapshot(); snap.FallbackMints != 1 || snap.Decisions["abort/fallback"] != 1 {
		t.Fatalf("counters %+v", snap)
	}

	r2, m2, _ := loopAgent(t, brokenKeys(t, true), func(n int, req Request) Reply {
		return Reply{ToolCalls: []ToolCall{magicCall("m1", "done")}}
	})
	got = answerText(r2.deliver("console", "go", ""))
	if !strings.HasPrefix(got, "[mathbot halted: ERR_MAGIC_TOOL_INTERNAL: ") {
		t.Fatalf("answer %q", got)
	}
	if n := len(m2.requests()); n != 1 {
		t.Fatalf("%d model calls, want 1", n)
	}
}
