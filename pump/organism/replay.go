package organism

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/xml"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sync"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/registry/store"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// ErrNothingToReplay reports a recording without an inbound external message
// to re-inject.
var ErrNothingToReplay = errors.New("organism: replay: the recording has no inbound external message")

// ReplayOp says how one output of a replay compares with the recording.
type ReplayOp string

// The replay comparison outcomes.
const (
	// ReplaySame: recorded and replayed outputs are identical.
	ReplaySame ReplayOp = "same"
	// ReplayChanged: same kind, sender, addressee and payload tag, different
	// payload bytes.
	ReplayChanged ReplayOp = "changed"
	// ReplayMissing: recorded, but the replay did not emit it.
	ReplayMissing ReplayOp = "missing"
	// ReplayExtra: emitted by the replay, absent from the recording.
	ReplayExtra ReplayOp = "extra"
)

// ReplayMessage is one journaled envelope reduced to what a replay compares:
// kind, sender, addressee, payload tag and canonical payload bytes. Thread
// ids and times are not compared.
type ReplayMessage struct {
	// Seq is the journal seq of a recorded message; for a replayed one, its
	// position in the replay's journal (1-based).
	Seq int64
	// Kind is the journal kind ("message", "huh", "system-error",
	// "dead-letter").
	Kind string
	// From, To and PayloadTag are as journaled.
	From, To, PayloadTag string
	// Payload is the canonical payload element (the whole journaled bytes
	// when they are not an envelope), with every thread id of the
	// conversation replaced by a symbol (thread-1, thread-2, … in order of
	// first appearance), so payloads quoting thread ids compare equal.
	Payload []byte
	// Thread is the thread the message travelled on (not compared).
	Thread string
}

// key is what pairs a recorded output with a replayed one.
func (m ReplayMessage) key() string {
	return m.Kind + "\x00" + m.From + "\x00" + m.To + "\x00" + m.PayloadTag
}

// ReplayStep is one output of the comparison, in conversation order.
type ReplayStep struct {
	Op ReplayOp
	// Recorded is nil for ReplayExtra; Replayed is nil for ReplayMissing.
	Recorded, Replayed *ReplayMessage
}

// ReplayInput is one inbound external message of the recording, as
// re-injected.
type ReplayInput struct {
	ReplayMessage
	// Rejected is the <huh> text when the fresh organism refused the message
	// (the recording had accepted it).
	Rejected string
}

// ReplayReport is the outcome of Replay.
type ReplayReport struct {
	// Conversation is the recorded conversation.
	Conversation string
	// Conversations are the replay's conversations (one when every input
	// re-entered the conversation the first one started).
	Conversations []string
	// Inputs are the re-injected messages, in journal order.
	Inputs []ReplayInput
	// Steps align the recorded outputs with the replayed ones.
	Steps []ReplayStep
	// Reordered reports that the outputs are the same messages in a
	// different order (concurrent handlers may legitimately reorder).
	Reordered bool
	// Printed are the lines listeners printed during the replay.
	Printed []string
}

// Identical reports whether the replay reproduced the recording: every input
// accepted and every output the same, in order or merely Reordered.
func (r *ReplayReport) Identical() bool {
	for _, in := range r.Inputs {
		if in.Rejected != "" {
			return false
		}
	}
	if r.Reordered {
		return true
	}
	for _, s := range r.Steps {
		if s.Op != ReplaySame {
			return false
		}
	}
	return true
}

// Count returns how many steps have op.
func (r *ReplayReport) Count(op ReplayOp) int {
	n := 0
	for _, s := range r.Steps {
		if s.Op == op {
			n++
		}
	}
	return n
}

// Replay re-runs a recorded conversation: it assembles a fresh organism from
// cfg entirely in memory (opts.DataDir, Store, Journal and the registries are
// ignored: nothing touches the recorded data directory), re-injects the
// recording's inbound external messages in journal order — each after the
// previous one's conversation completed, with thread ids the recording's
// outputs created mapped to the replay's — and compares the outbound
// envelopes the fresh organism journals for the conversation with the
// recorded ones. recorded is the conversation's journal (Reader.Conversation).
// progress, when not nil, is called with (inputs done, inputs total).
func Replay(ctx context.Context, cfg *config.Organism, opts Options, recorded []store.Entry,
	progress func(done, total int64)) (*ReplayReport, error) {
	var inputs []store.Entry
	for _, e := range recorded {
		if e.Direction == store.Inbound && e.Kind == store.Message {
			inputs = append(inputs, e)
		}
	}
	if len(inputs) == 0 {
		return nil, ErrNothingToReplay
	}
	capture := &replayJournal{}
	printed := &replayPrinted{}
	opts.DataDir, opts.Store, opts.Journal = "", nil, capture
	opts.Threads, opts.Todos, opts.Context = nil, nil, nil
	next := opts.Env.Print
	opts.Env.Print = func(thread, from, text string) {
		printed.add("[" + from + "] " + text)
		if next != nil {
			next(thread, from, text)
		}
	}
	o, err := New(cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("organism: replay: %w", err)
	}
	if err := o.Start(); err != nil {
		return nil, errors.Join(fmt.Errorf("organism: replay: %w", err), o.Shutdown(context.Background()))
	}
	rep := &ReplayReport{Conversation: inputs[0].Conversation}
	if rep.Conversation == "" {
		rep.Conversation = inputs[0].Thread
	}
	r := &replayRun{o: o, capture: capture, recorded: recorded, threads: map[string]string{}, convs: map[string]bool{}}
	runErr := r.inject(ctx, inputs, rep, progress)
	if err := o.Shutdown(context.Background()); err != nil || runErr != nil {
		return nil, errors.Join(runErr, err)
	}
	recOut, repOut := r.outputs()
	rep.Steps = align(recOut, repOut)
	rep.Reordered = !sameInOrder(rep.Steps) && sameMultiset(recOut, repOut)
	rep.Printed = printed.lines()
	for conv := range r.convs {
		rep.Conversations = append(rep.Conversations, conv)
	}
	slices.Sort(rep.Conversations)
	return rep, nil
}

// replayRun is the state of one Replay.
type replayRun struct {
	o        *Organism
	capture  *replayJournal
	recorded []store.Entry
	// threads maps recorded thread ids to the replay's.
	threads map[string]string
	// convs are the replay's conversations.
	convs map[string]bool
}

// inject re-injects inputs one at a time, waiting for each conversation to
// complete.
func (r *replayRun) inject(ctx context.Context, inputs []store.Entry, rep *ReplayReport,
	progress func(done, total int64)) error {
	for i, in := range inputs {
		env := in.Bytes
		if to, ok := r.threads[in.Thread]; ok && to != in.Thread {
			env = rethread(env, in.Thread, to)
		}
		ri := ReplayInput{ReplayMessage: reduce(in, nil)}
		completed := make(chan string, 1)
		outlet := pump.OutletFunc(func(e pump.Event) {
			if e.Kind == pump.EventComplete {
				select {
				case completed <- e.Conversation:
				default:
				}
			}
		})
		thread, err := r.o.Pump.InjectWait(ctx, env, outlet)
		if f, ok := errors.AsType[*failure.Failure](err); ok {
			ri.Rejected = f.Canned()
		} else if err != nil {
			return fmt.Errorf("organism: replay: inject seq %d: %w", in.Seq, err)
		} else {
			r.threads[in.Thread] = thread
			select {
			case conv := <-completed:
				r.convs[conv] = true
			case <-ctx.Done():
				return fmt.Errorf("organism: replay: seq %d never completed: %w", in.Seq, ctx.Err())
			}
		}
		rep.Inputs = append(rep.Inputs, ri)
		if i+1 < len(inputs) {
			r.mapThreads(inputs[i+1].Seq)
		}
		if progress != nil {
			progress(int64(i+1), int64(len(inputs)))
		}
	}
	return nil
}

// threadElement matches a <thread> element whatever its prefix: <thread>
// in the Go form, <ns0:thread> in an envelope as Python's ElementTree
// writes one. The journal keeps an inbound envelope as it came.
var threadElement = regexp.MustCompile(`<([A-Za-z_][\w.-]*:)?thread>\s*([0-9a-f-]{36})\s*</([A-Za-z_][\w.-]*:)?thread>`)

// rethread returns env with its <thread> from replaced by to: the first
// thread element (the envelope's <meta> comes before its payload) naming
// from, in whichever prefix env writes it. env is unchanged when no thread
// element names from.
func rethread(env []byte, from, to string) []byte {
	for _, m := range threadElement.FindAllSubmatchIndex(env, -1) {
		if string(env[m[4]:m[5]]) != from {
			continue
		}
		out := make([]byte, 0, len(env)-len(from)+len(to))
		out = append(out, env[:m[4]]...)
		out = append(out, to...)
		return append(out, env[m[5]:]...)
	}
	return env
}

// mapThreads pairs the recorded outputs journaled before seq with the
// replay's outputs so far and maps each recorded thread to its replayed
// counterpart, so a later input on a thread the organism created re-enters
// the replay's thread.
func (r *replayRun) mapThreads(before int64) {
	rec := slices.DeleteFunc(slices.Clone(r.recorded), func(e store.Entry) bool { return e.Seq >= before })
	recOut := reduceAll(outbound(rec), nil)
	repOut := reduceAll(outbound(r.replayed()), nil)
	for _, s := range align(recOut, repOut) {
		if s.Recorded != nil && s.Replayed != nil && s.Recorded.Thread != "" {
			if _, ok := r.threads[s.Recorded.Thread]; !ok {
				r.threads[s.Recorded.Thread] = s.Replayed.Thread
			}
		}
	}
}

// replayed returns the replay's journal entries of its conversations.
func (r *replayRun) replayed() []store.Entry {
	var out []store.Entry
	for _, e := range r.capture.all() {
		if r.convs[e.Conversation] {
			out = append(out, e)
		}
	}
	return out
}

// outputs returns the recorded and replayed outbound messages, reduced with
// each side's thread symbols.
func (r *replayRun) outputs() (recorded, replayed []ReplayMessage) {
	rep := r.replayed()
	return reduceAll(outbound(r.recorded), threadSymbols(r.recorded)),
		reduceAll(outbound(rep), threadSymbols(rep))
}

// outbound returns the Outbound entries of es.
func outbound(es []store.Entry) []store.Entry {
	return slices.DeleteFunc(slices.Clone(es), func(e store.Entry) bool { return e.Direction != store.Outbound })
}

// reduceAll reduces entries, numbering replayed ones by position when they
// carry no seq.
func reduceAll(es []store.Entry, symbols map[string]string) []ReplayMessage {
	out := make([]ReplayMessage, len(es))
	for i, e := range es {
		out[i] = reduce(e, symbols)
		if out[i].Seq == 0 {
			out[i].Seq = int64(i + 1)
		}
	}
	return out
}

// reduce turns an entry into a ReplayMessage, replacing the thread ids in
// symbols by their symbols in the payload.
func reduce(e store.Entry, symbols map[string]string) ReplayMessage {
	p := expandOriginalAttempt(payloadOf(e.Bytes))
	for id, sym := range symbols {
		p = bytes.ReplaceAll(p, []byte(id), []byte(sym))
	}
	return ReplayMessage{Seq: e.Seq, Kind: e.Kind.String(), From: e.From, To: e.To, PayloadTag: e.PayloadTag,
		Payload: p, Thread: e.Thread}
}

// originalAttempt matches the base64 content of a <huh>'s original-attempt.
var originalAttempt = regexp.MustCompile(`<original-attempt>([A-Za-z0-9+/=\s]*)</original-attempt>`)

// expandOriginalAttempt replaces the base64 original attempt of a <huh>
// payload by its decoded text (escaped), so the thread ids inside it are
// normalised like the rest of the payload: a recorded and a replayed <huh>
// about the same message then compare equal. Other payloads are unchanged.
func expandOriginalAttempt(p []byte) []byte {
	return originalAttempt.ReplaceAllFunc(p, func(m []byte) []byte {
		raw := originalAttempt.FindSubmatch(m)[1]
		dec, err := base64.StdEncoding.DecodeString(string(bytes.Join(bytes.Fields(raw), nil)))
		if err != nil {
			return m
		}
		var b bytes.Buffer
		b.WriteString("<original-attempt>")
		_ = xml.EscapeText(&b, dec)
		b.WriteString("</original-attempt>")
		return b.Bytes()
	})
}

// threadSymbols names the thread ids of es thread-1, thread-2, … in order of
// first appearance (as thread or conversation).
func threadSymbols(es []store.Entry) map[string]string {
	out := map[string]string{}
	for _, e := range es {
		for _, id := range []string{e.Conversation, e.Thread} {
			if _, ok := out[id]; !ok && stage.IsThreadID(id) {
				out[id] = fmt.Sprintf("thread-%d", len(out)+1)
			}
		}
	}
	return out
}

// payloadOf returns a copy of the payload element of a canonical envelope,
// whatever the root's prefix (stage.EnvelopePayload), or of b itself when b
// is not an envelope (a failed message's raw bytes, a synthesized record).
func payloadOf(b []byte) []byte {
	if p, ok := stage.EnvelopePayload(b); ok {
		return slices.Clone(p)
	}
	return slices.Clone(b)
}

// maxAlignCells bounds the longest-common-subsequence table; longer
// recordings are paired by position.
const maxAlignCells = 1 << 22

// align pairs recorded and replayed outputs by a longest common subsequence
// of their keys (kind, from, to, payload tag), so one changed, missing or
// extra message does not shift every later comparison.
func align(rec, rep []ReplayMessage) []ReplayStep {
	n, m := len(rec), len(rep)
	if n*m > maxAlignCells {
		return alignByPosition(rec, rep)
	}
	// lcs[i][j] is the LCS length of rec[i:] and rep[j:].
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if rec[i].key() == rep[j].key() {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var steps []ReplayStep
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && rec[i].key() == rep[j].key():
			steps = append(steps, pair(&rec[i], &rep[j]))
			i++
			j++
		case j == m || i < n && lcs[i+1][j] >= lcs[i][j+1]:
			steps = append(steps, ReplayStep{Op: ReplayMissing, Recorded: &rec[i]})
			i++
		default:
			steps = append(steps, ReplayStep{Op: ReplayExtra, Replayed: &rep[j]})
			j++
		}
	}
	return steps
}

// alignByPosition pairs the i-th recorded output with the i-th replayed one.
func alignByPosition(rec, rep []ReplayMessage) []ReplayStep {
	var steps []ReplayStep
	for i := range max(len(rec), len(rep)) {
		switch {
		case i >= len(rep):
			steps = append(steps, ReplayStep{Op: ReplayMissing, Recorded: &rec[i]})
		case i >= len(rec):
			steps = append(steps, ReplayStep{Op: ReplayExtra, Replayed: &rep[i]})
		case rec[i].key() == rep[i].key():
			steps = append(steps, pair(&rec[i], &rep[i]))
		default:
			steps = append(steps, ReplayStep{Op: ReplayMissing, Recorded: &rec[i]},
				ReplayStep{Op: ReplayExtra, Replayed: &rep[i]})
		}
	}
	return steps
}

// pair compares two outputs with the same key.
func pair(rec, rep *ReplayMessage) ReplayStep {
	op := ReplaySame
	if !bytes.Equal(rec.Payload, rep.Payload) {
		op = ReplayChanged
	}
	return ReplayStep{Op: op, Recorded: rec, Replayed: rep}
}

// sameInOrder reports whether every step is ReplaySame.
func sameInOrder(steps []ReplayStep) bool {
	for _, s := range steps {
		if s.Op != ReplaySame {
			return false
		}
	}
	return true
}

// sameMultiset reports whether rec and rep hold the same messages (key and
// payload), ignoring order.
func sameMultiset(rec, rep []ReplayMessage) bool {
	if len(rec) != len(rep) {
		return false
	}
	count := map[string]int{}
	for _, m := range rec {
		count[m.key()+"\x00"+string(m.Payload)]++
	}
	for _, m := range rep {
		k := m.key() + "\x00" + string(m.Payload)
		if count[k] == 0 {
			return false
		}
		count[k]--
	}
	return true
}

// replayJournal is the in-memory journal of a replayed organism: it keeps
// every record as the durable journal would have stored it.
type replayJournal struct {
	mu      sync.Mutex
	entries []store.Entry
}

// Record keeps r, with a copy of its bytes.
func (j *replayJournal) Record(r pump.Record) {
	e := entryOf(r)
	e.Bytes = slices.Clone(e.Bytes)
	j.mu.Lock()
	defer j.mu.Unlock()
	j.entries = append(j.entries, e)
}

// all returns the records so far, in journal order.
func (j *replayJournal) all() []store.Entry {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.entries)
}

// replayPrinted collects the lines listeners print during a replay.
type replayPrinted struct {
	mu  sync.Mutex
	out []string
}

func (p *replayPrinted) add(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.out = append(p.out, line)
}

func (p *replayPrinted) lines() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.out)
}
