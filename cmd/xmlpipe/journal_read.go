package main

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// runJournalTail is `xmlpipe journal tail [-n N] [-f]`: the last N entries,
// one line each; -f keeps printing new entries until SIGINT/SIGTERM. It
// reads the store read-only, so it follows the journal of a running
// organism.
func runJournalTail(ctx context.Context, args []string, std streams) int {
	fs := newFlags("journal tail", "[-n N] [-f] [--data DIR] [--config organism.yaml]", std.err)
	n := fs.Int("n", 20, "number of entries (0: none, with -f only the new ones)")
	follow := fs.Bool("f", false, "follow: print new entries as they are committed, until interrupted")
	interval := fs.Duration("interval", store.DefaultFollowInterval, "with -f, how often to look for new entries")
	sf := addStoreFlags(fs)
	_, s, code, ok := sf.begin(fs, args, 0, 0, std.err)
	if !ok {
		return code
	}
	defer closeStore(s, std.err)
	if *n < 0 {
		fmt.Fprintf(std.err, "xmlpipe journal tail: -n %d: want 0 or more entries\n", *n)
		fs.Usage()
		return exitUsage
	}
	entries, err := s.TailPositions(*n)
	if err != nil {
		fmt.Fprintln(std.err, "xmlpipe journal tail:", err)
		return exitFailure
	}
	var last int64
	if len(entries) > 0 {
		last = entries[len(entries)-1].Seq
	} else if last, err = s.LastSeq(); err != nil {
		fmt.Fprintln(std.err, "xmlpipe journal tail:", err)
		return exitFailure
	}
	for _, e := range entries {
		fmt.Fprintln(std.out, positionLine(e))
	}
	if !*follow {
		return exitOK
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	err = s.FollowPositions(ctx, last, *interval, func(p store.Position) error {
		_, err := fmt.Fprintln(std.out, positionLine(p))
		return err
	})
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(std.err, "xmlpipe journal tail:", err)
		return exitFailure
	}
	return exitOK
}

// entryLine is the one-line form of an entry, with its profile when it has
// one.
func entryLine(e store.Entry) string {
	return fmt.Sprintf("%6d %s %-8s %-12s %s → %s [%s] thread=%s %dB%s", e.Seq, e.Time.Format(time.RFC3339Nano),
		e.Direction, e.Kind, e.From, orDash(e.To), orDash(e.PayloadTag), e.Thread, len(e.Bytes), profileNote(e))
}

// positionLine is the one-line form of a journal position: an entry's
// entryLine, or for a pruned entry its metadata and why and when
// retention pruned it.
func positionLine(p store.Position) string {
	switch {
	case p.Pruned == nil:
		return entryLine(p.Entry)
	case p.Pruned.NoMetadata:
		return fmt.Sprintf("%6d pruned by %s at %s (no metadata kept)", p.Seq, p.Pruned.Reason,
			p.Pruned.At.Format(time.RFC3339))
	}
	e := p.Entry
	return fmt.Sprintf("%6d %s %-8s %-12s %s → %s [%s] thread=%s pruned by %s at %s%s", e.Seq,
		e.Time.Format(time.RFC3339Nano), e.Direction, e.Kind, e.From, orDash(e.To), orDash(e.PayloadTag), e.Thread,
		p.Pruned.Reason, p.Pruned.At.Format(time.RFC3339), profileNote(e))
}

// profileNote is " profile=P" for an entry journaled under profile P, ""
// for the implicit profile and " profile=(not recorded)" for an entry
// journaled before the journal recorded profiles.
func profileNote(e store.Entry) string {
	switch {
	case e.ProfileUnknown:
		return " profile=(not recorded)"
	case e.Profile != "":
		return " profile=" + e.Profile
	}
	return ""
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// runJournalThread is `xmlpipe journal thread <uuid>`: the conversation (or
// the single thread) in order, one block per entry, pretty-printed.
func runJournalThread(_ context.Context, args []string, std streams) int {
	fs := newFlags("journal thread", "<uuid> [--data DIR] [--config organism.yaml]", std.err)
	sf := addStoreFlags(fs)
	pos, s, code, ok := sf.begin(fs, args, 1, 1, std.err)
	if !ok {
		return code
	}
	defer closeStore(s, std.err)
	entries, err := threadEntries(s, pos[0])
	if err != nil {
		fmt.Fprintln(std.err, "xmlpipe journal thread:", err)
		return exitFailure
	}
	pruned, err := s.PrunedOf(pos[0])
	if err != nil {
		fmt.Fprintln(std.err, "xmlpipe journal thread:", err)
		return exitFailure
	}
	if len(entries) == 0 && len(pruned) == 0 {
		fmt.Fprintf(std.err, "xmlpipe journal thread: no journal entries for %s\n", pos[0])
		return exitFailure
	}
	calls, err := s.Calls(store.CallFilter{Thread: pos[0], Limit: maxThreadCalls})
	if err != nil {
		fmt.Fprintln(std.err, "xmlpipe journal thread:", err)
		return exitFailure
	}
	for i, e := range entries {
		if i > 0 {
			fmt.Fprintln(std.out)
		}
		pruned = printPruned(std.out, pruned, e.Seq)
		calls = printCalls(std.out, calls, e)
		fmt.Fprintf(std.out, "#%d %s %s %s %s → %s%s\n", e.Seq, e.Time.Format(time.RFC3339Nano), e.Direction, e.Kind,
			e.From, orDash(e.To), profileNote(e))
		fmt.Fprintln(std.out, indentXML(e.Bytes))
		if e.Diagnostics != "" {
			fmt.Fprintf(std.out, "diagnostics: %s\n", strings.ReplaceAll(e.Diagnostics, "\n", "\n  "))
		}
	}
	if len(pruned) > 0 && len(entries) > 0 {
		fmt.Fprintln(std.out)
	}
	printPruned(std.out, pruned, 0)
	if len(calls) > 0 {
		fmt.Fprintln(std.out)
		for _, c := range calls {
			fmt.Fprintln(std.out, callLine(c))
		}
	}
	conv := pos[0]
	if len(entries) > 0 && entries[0].Conversation != "" {
		conv = entries[0].Conversation
	}
	k, err := s.KillOf(conv)
	if err != nil {
		fmt.Fprintln(std.err, "xmlpipe journal thread:", err)
		return exitFailure
	}
	if k != nil {
		fmt.Fprintf(std.out, "\nkilled at %s: conversation %s ended for good\n", k.At.Format(time.RFC3339Nano), conv)
	}
	return exitOK
}

// printPruned writes the pruned entries before seq (all of them for seq
// 0: none is left) — their metadata, and why and when retention pruned
// them — and returns the rest.
func printPruned(w io.Writer, pruned []store.Pruned, seq int64) []store.Pruned {
	for len(pruned) > 0 && (seq <= 0 || pruned[0].Seq < seq) {
		p := pruned[0]
		fmt.Fprintf(w, "#%d %s %s %s %s → %s [%s]%s\npruned by %s at %s: payload not kept (sha256 %x)\n\n", p.Seq,
			p.Time.Format(time.RFC3339Nano), p.Direction, p.Kind, p.From, orDash(p.To), orDash(p.PayloadTag),
			profileNote(p.Entry), p.Reason, p.At.Format(time.RFC3339), p.SHA256)
		pruned = pruned[1:]
	}
	return pruned
}

// maxThreadCalls bounds the LLM calls journal thread shows.
const maxThreadCalls = 1000

// printCalls writes, before entry e, the LLM calls that produced it (linked
// to its seq) and those without a link that ended before it was journaled,
// and returns the calls still to show.
func printCalls(w io.Writer, calls []store.CallRow, e store.Entry) []store.CallRow {
	rest := calls[:0:0]
	for _, c := range calls {
		if c.EnvelopeSeq == e.Seq || c.EnvelopeSeq == 0 && !c.Time.Add(c.Duration).After(e.Time) {
			fmt.Fprintln(w, callLine(c))
			continue
		}
		rest = append(rest, c)
	}
	return rest
}

// callLine is the one-line form of an LLM call: its id, time, agent,
// backend and model, tokens (≈ when estimated) and latency or failure, and the envelope it
// produced.
func callLine(c store.CallRow) string {
	line := fmt.Sprintf("llm call %d %s %s %s/%s attempt %d: ", c.ID, c.Time.Format(time.RFC3339Nano), orDash(c.Agent),
		c.Backend, orDash(c.Model), c.Attempt)
	approx := "" // tokens that are an estimate read ≈
	if c.UsageEstimated {
		approx = "≈"
	}
	switch {
	case c.FinishReason == organism.FinishAborted:
		line += fmt.Sprintf("aborted after %v, %s%d + %d tokens spent: %s", c.Duration.Round(time.Millisecond),
			approx, c.PromptTokens, c.CompletionTokens, c.Error)
	case c.Error != "":
		line += fmt.Sprintf("failed after %v: %s", c.Duration.Round(time.Millisecond), c.Error)
	default:
		line += fmt.Sprintf("%s%d + %d tokens, first token %v, total %v, %s", approx, c.PromptTokens, c.CompletionTokens,
			c.FirstToken.Round(time.Millisecond), c.Duration.Round(time.Millisecond), orDash(c.FinishReason))
		if c.ToolCalls > 0 {
			line += fmt.Sprintf(", %d tool calls", c.ToolCalls)
		}
	}
	if c.EnvelopeSeq > 0 {
		line += fmt.Sprintf(" → #%d", c.EnvelopeSeq)
	}
	return line
}

// threadEntries returns the entries of conversation id, or of thread id when
// id is not a conversation.
func threadEntries(s *store.Reader, id string) ([]store.Entry, error) {
	entries, err := s.Conversation(id)
	if err != nil || len(entries) > 0 {
		return entries, err
	}
	return s.Thread(id)
}

// indentXML pretty-prints an XML document; bytes that do not parse are
// returned as they are.
func indentXML(b []byte) string {
	dec := xml.NewDecoder(bytes.NewReader(b))
	var out bytes.Buffer
	enc := xml.NewEncoder(&out)
	enc.Indent("", "  ")
	for {
		tok, err := dec.RawToken()
		if err == io.EOF {
			break
		}
		if err != nil {
			return string(b)
		}
		if cd, ok := tok.(xml.CharData); ok && len(bytes.TrimSpace(cd)) == 0 {
			continue
		}
		if err := enc.EncodeToken(tok); err != nil {
			return string(b)
		}
	}
	if err := enc.Flush(); err != nil {
		return string(b)
	}
	return out.String()
}
