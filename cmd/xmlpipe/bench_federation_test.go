package main

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBenchFederation runs `xmlpipe bench --federation` briefly: two
// organisms, a real TLS link, every call answered, the floor and its ratio
// computed, the federation state's commits counted among the stores', a
// CPU profile written, the statements listed only with --statements; and
// refuses the flags it cannot use.
func TestBenchFederation(t *testing.T) {
	dir := t.TempDir()
	prof := filepath.Join(dir, "fed.prof")
	r := runBinary(t, dir, "", "bench", "--federation", "--callers", "4", "--duration", "500ms", "--samples", "20",
		"--json", "--cpuprofile", prof)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	var got fedBench
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	switch {
	case got.Calls == 0 || got.Envelopes < 2*got.Calls:
		t.Errorf("%d calls carried %d envelopes; want some, two each at least", got.Calls, got.Envelopes)
	case got.Lost != 0 || got.Errors != 0 || got.Refused != 0:
		t.Errorf("lost %d, errors %d (%q), refused %d; want none", got.Lost, got.Errors, got.FirstErrors, got.Refused)
	case got.Callers != 4 || got.Samples != 20 || got.EnvelopesPerSec <= 0:
		t.Errorf("callers %d, samples %d, envelopes/s %f", got.Callers, got.Samples, got.EnvelopesPerSec)
	case got.LinkP50us <= 0 || got.LocalP50us <= 0 || got.LinkP99us < got.LinkP50us:
		t.Errorf("latencies: link p50 %f p99 %f, local p50 %f", got.LinkP50us, got.LinkP99us, got.LocalP50us)
	case got.SignUs <= 0 || got.VerifyUs <= 0 || got.C14NUs <= 0 || got.FloorUs != got.SignUs+got.VerifyUs+got.C14NUs:
		t.Errorf("floor %f = sign %f + verify %f + c14n %f?", got.FloorUs, got.SignUs, got.VerifyUs, got.C14NUs)
	case got.CPUPerEnvelopeUs <= 0 || got.FloorRatio <= 0 ||
		math.Abs(got.FloorRatio-got.CPUPerEnvelopeUs/got.FloorUs) > 1e-9*got.FloorRatio:
		t.Errorf("ratio %f of cpu/envelope %f over floor %f", got.FloorRatio, got.CPUPerEnvelopeUs, got.FloorUs)
	case got.StateCommits <= 0 || got.StateCommits > got.JournalCommits:
		// The federation state's writes ride in the stores' commits: the
		// commits that carried them are some of those, not more.
		t.Errorf("state commits %f per envelope, store commits %f: want some, and no more than the store's",
			got.StateCommits, got.JournalCommits)
	}
	if fi, err := os.Stat(prof); err != nil || fi.Size() == 0 {
		t.Errorf("no CPU profile: %v", err)
	}
	// The statement tables cost the bench a snapshot of both stores'
	// statement counts around every sequential call: taken only when
	// asked for (--statements), so they weigh on no other run.
	if len(got.SequentialByStatement) != 0 || len(got.ByStatement) != 0 {
		t.Errorf("statements listed without --statements: %d sequential, %d throughput",
			len(got.SequentialByStatement), len(got.ByStatement))
	}
	asked := runBinary(t, dir, "", "bench", "--federation", "--callers", "4", "--duration", "300ms", "--samples", "10",
		"--json", "--statements")
	if asked.code != 0 {
		t.Fatalf("--statements: exit %d\n%s", asked.code, asked.stderr)
	}
	got = fedBench{}
	if err := json.Unmarshal([]byte(asked.stdout), &got); err != nil {
		t.Fatalf("%v: %s", err, asked.stdout)
	}
	// Every call is recorded received by the callee, once: one row per
	// call. The rows of one group commit go out in one statement, so under
	// throughput the statement runs at most once per call, and less when
	// commits gather several calls.
	for phase, ss := range map[string][]fedStatement{"sequential": got.SequentialByStatement, "throughput": got.ByStatement} {
		byName := map[string]fedStatement{}
		for _, s := range ss {
			byName[s.Organism+" "+s.Statement] = s
		}
		const received = "b INSERT OR IGNORE INTO federation_received (conv, at) VALUES (…)"
		r, ok := byName[received]
		if !ok || math.Abs(r.Rows-1) > 0.1 || r.Runs > r.Rows+1e-9 {
			t.Errorf("%s: %q wrote %f rows in %f runs per call, want 1 row in at most 1 run; statements:\n%v",
				phase, received, r.Rows, r.Runs, ss)
		}
	}

	text := runBinary(t, dir, "", "bench", "--federation", "--callers", "2", "--duration", "200ms", "--samples", "5",
		"--statements")
	for _, want := range []string{"signed envelopes/s", "floor ratio", "statements per call, sequential",
		"statements per call, throughput", "INSERT OR IGNORE INTO federation_seen"} {
		if text.code != 0 || !strings.Contains(text.stdout, want) {
			t.Errorf("text output lacks %q, exit %d:\n%s%s", want, text.code, text.stdout, text.stderr)
		}
	}
	for _, args := range [][]string{{"--bus"}, {"--journal"}, {"--callers", "0"}} {
		if r := runBinary(t, dir, "", append([]string{"bench", "--federation"}, args...)...); r.code != exitUsage {
			t.Errorf("bench --federation %q: exit %d, want %d", args, r.code, exitUsage)
		}
	}
}

// TestCloseStepsOwnBudgets: each step of the bench's close has a budget of
// its own, so a first step that takes most of it (a slow shutdown of A)
// leaves the next one (B's) a live context, not an expired one its pump
// would report as "0 messages still in flight: context deadline exceeded";
// a step that fails is named, with how long it took.
func TestCloseStepsOwnBudgets(t *testing.T) {
	const budget = 500 * time.Millisecond
	slow := closeStep{"slow", func(ctx context.Context) error {
		select {
		case <-time.After(budget * 3 / 4):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}}
	live := closeStep{"next", func(ctx context.Context) error { return ctx.Err() }}
	if err := closeSteps(budget, slow, live, slow, live); err != nil {
		t.Errorf("steps within their own budgets failed: %v", err)
	}
	failing := closeStep{"organism b: shutdown", func(context.Context) error { return errors.New("it broke") }}
	err := closeSteps(budget, live, failing)
	if err == nil || !strings.Contains(err.Error(), "organism b: shutdown (after ") || !strings.Contains(err.Error(), "it broke") {
		t.Errorf("a failed step reads %v; want it named, with how long it took", err)
	}
}
