package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/catalog"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// replayPayloadMax bounds how much of a payload a replay difference shows.
const replayPayloadMax = 600

// runJournalReplay is `xmlpipe journal replay <uuid> [--into organism.yaml]`:
// the recorded conversation holding thread uuid is re-run in a fresh
// in-memory organism built from --into (its inbound external messages
// re-injected in order), and the outputs are compared with the recorded ones
// (kind, from, to, payload tag, canonical payload; thread ids and times
// ignored). Exit 0 when identical, 1 when different.
func runJournalReplay(ctx context.Context, args []string, std streams) int {
	fs := newFlags("journal replay", "<thread-uuid> [--into organism.yaml] [--timeout 1m] [--data DIR] [--config organism.yaml]", std.err)
	into := fs.String("into", "", "organism.yaml to replay into (default: --config, else ./organism.yaml, ./config/organism.yaml or the embedded hello-world)")
	timeout := fs.Duration("timeout", time.Minute, "bound on the whole replay")
	sf := addStoreFlags(fs)
	pos, r, code, ok := sf.begin(fs, args, 1, 1, std.err)
	if !ok {
		return code
	}
	fail := func(err error) int {
		fmt.Fprintln(std.err, "xmlpipe journal replay:", err)
		return exitFailure
	}
	entries, err := conversationOf(r, pos[0])
	closeStore(r, std.err)
	if err != nil {
		return fail(err)
	}

	var src configSource
	switch {
	case *into != "":
		src = resolveConfig([]string{*into})
	case *sf.config != "":
		src = resolveConfig([]string{*sf.config})
	default:
		src = resolveConfig(nil)
	}
	cfg, err := src.load()
	if err != nil {
		return fail(err)
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	logger := slog.New(slog.NewTextHandler(std.err, &slog.HandlerOptions{Level: slog.LevelWarn}))
	bar := newProgress(std.err, "replaying inputs")
	// No LLM layer is compiled in yet: agents answer from their templates, as
	// in the console.
	rep, err := organism.Replay(ctx, cfg, organism.Options{Logger: logger, Env: catalog.Env{}}, entries, bar.Update)
	bar.Done()
	if err != nil {
		return fail(err)
	}
	writeReplay(std.out, rep, cfg.Organism.Name, src.path)
	if rep.Identical() {
		return exitOK
	}
	return exitFailure
}

// conversationOf returns the journal of the conversation holding thread id
// (id may also be a conversation id).
func conversationOf(r *store.Reader, id string) ([]store.Entry, error) {
	thread, err := r.Thread(id)
	if err != nil {
		return nil, err
	}
	conv := id
	for _, e := range thread {
		if e.Conversation != "" {
			conv = e.Conversation
			break
		}
	}
	entries, err := r.Conversation(conv)
	if err != nil {
		return nil, err
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("no journaled conversation holds %s", id)
	}
	return entries, nil
}

// writeReplay prints the replay report: the inputs, one line per output
// with its verdict, the payloads of differences, and a summary.
func writeReplay(w io.Writer, rep *organism.ReplayReport, organismName, path string) {
	fmt.Fprintf(w, "replaying conversation %s into %s (%s): %d inbound message(s)\n",
		rep.Conversation, organismName, path, len(rep.Inputs))
	for _, in := range rep.Inputs {
		fmt.Fprintf(w, "input    #%d %s\n", in.Seq, hop(in.ReplayMessage))
		if in.Rejected != "" {
			fmt.Fprintf(w, "  ! refused by the replay: %s\n", in.Rejected)
		}
	}
	var recorded, replayed int
	for _, s := range rep.Steps {
		switch s.Op {
		case organism.ReplaySame:
			fmt.Fprintf(w, "same     #%d %s\n", s.Recorded.Seq, hop(*s.Recorded))
		case organism.ReplayChanged:
			fmt.Fprintf(w, "changed  #%d %s\n", s.Recorded.Seq, hop(*s.Recorded))
			fmt.Fprintf(w, "  - recorded: %s\n  + replayed: %s\n", clipText(s.Recorded.Payload), clipText(s.Replayed.Payload))
		case organism.ReplayMissing:
			fmt.Fprintf(w, "missing  #%d %s\n", s.Recorded.Seq, hop(*s.Recorded))
			fmt.Fprintf(w, "  - recorded: %s\n", clipText(s.Recorded.Payload))
		case organism.ReplayExtra:
			fmt.Fprintf(w, "extra       %s\n", hop(*s.Replayed))
			fmt.Fprintf(w, "  + replayed: %s\n", clipText(s.Replayed.Payload))
		}
		if s.Recorded != nil {
			recorded++
		}
		if s.Replayed != nil {
			replayed++
		}
	}
	for _, line := range rep.Printed {
		fmt.Fprintf(w, "printed  %s\n", line)
	}
	switch {
	case rep.Identical() && rep.Reordered:
		fmt.Fprintf(w, "identical: the %d recorded outputs were reproduced in a different order\n", recorded)
	case rep.Identical():
		fmt.Fprintf(w, "identical: %d of %d recorded outputs reproduced\n", rep.Count(organism.ReplaySame), recorded)
	default:
		refused := 0
		for _, in := range rep.Inputs {
			if in.Rejected != "" {
				refused++
			}
		}
		fmt.Fprintf(w, "different: %d changed, %d missing, %d extra, %d input(s) refused (%d recorded outputs, %d replayed)\n",
			rep.Count(organism.ReplayChanged), rep.Count(organism.ReplayMissing), rep.Count(organism.ReplayExtra),
			refused, recorded, replayed)
	}
}

// hop is "kind from → to [tag]" (kind only when not a plain message).
func hop(m organism.ReplayMessage) string {
	s := fmt.Sprintf("%s → %s [%s]", m.From, orDash(m.To), orDash(m.PayloadTag))
	if m.Kind != store.Message.String() {
		s = m.Kind + " " + s
	}
	return s
}

// clipText shows at most replayPayloadMax bytes of a payload.
func clipText(b []byte) string {
	if len(b) > replayPayloadMax {
		return string(b[:replayPayloadMax]) + fmt.Sprintf("… (%d bytes)", len(b))
	}
	return string(b)
}
