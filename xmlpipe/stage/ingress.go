package stage

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/xml-pipeline/xmlpipe/schemas"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/internal/lx"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/internal/payloadschema"
)

// DefaultMaxBytes is the default size cap of one message (1 MiB).
const DefaultMaxBytes = 1 << 20

// IngressConfig configures the ingress stages.
type IngressConfig struct {
	// MaxBytes caps the size of one message; 0 means DefaultMaxBytes.
	MaxBytes int
}

// Ingress runs the envelope stages: size cap, strict parse (repair path on
// failure), envelope validation, payload extraction, thread assignment and
// exclusive C14N. It is safe for concurrent use.
type Ingress struct {
	maxBytes int
	envelope *lx.Schema
}

var (
	envelopeOnce   sync.Once
	envelopeSchema *lx.Schema
	envelopeErr    error
)

// compiledEnvelope compiles the embedded envelope schema once per process.
func compiledEnvelope() (*lx.Schema, error) {
	envelopeOnce.Do(func() {
		s, errs := lx.CompileSchema(schemas.Envelope(), "mem:/schemas/envelope.xsd")
		if s == nil {
			envelopeErr = fmt.Errorf("xmlpipe: envelope schema: %w", errs)
			return
		}
		envelopeSchema = s
	})
	return envelopeSchema, envelopeErr
}

// NewIngress compiles what the stages need.
func NewIngress(cfg IngressConfig) (*Ingress, error) {
	s, err := compiledEnvelope()
	if err != nil {
		return nil, err
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	return &Ingress{maxBytes: cfg.MaxBytes, envelope: s}, nil
}

// MaxBytes returns the size cap.
func (in *Ingress) MaxBytes() int { return in.maxBytes }

// Inbound is a message that passed the envelope stages. It owns the parsed
// document until Close; one goroutine at a time may use it.
type Inbound struct {
	Envelope
	doc          *lx.Doc
	payload      lx.Node
	payloadStart int
}

// Close frees the parsed document. It is safe to call more than once.
func (m *Inbound) Close() {
	if m == nil {
		return
	}
	m.doc.Free()
	m.doc = nil
}

func diagsOf(stage failure.Stage, e *lx.Errors) []failure.Diagnostic {
	if e == nil {
		return nil
	}
	out := make([]failure.Diagnostic, 0, len(e.List)+1)
	for _, it := range e.List {
		out = append(out, failure.Diagnostic{Stage: stage, Line: it.Line, Path: it.Path, Msg: it.Msg})
	}
	if e.Dropped > 0 {
		out = append(out, failure.Diagnostic{Stage: stage, Msg: fmt.Sprintf("%d more diagnostics dropped", e.Dropped)})
	}
	return out
}

// Read runs the envelope stages on raw bytes. On success the caller owns the
// returned Inbound and must Close it. Every failure is a *failure.Failure. When raw
// parses without repair and a byte scan proves it already is exclusive C14N
// (isExcC14N), the C14N pass is skipped and Canonical is a copy of raw.
func (in *Ingress) Read(raw []byte) (*Inbound, error) {
	if err := in.precheck(raw); err != nil {
		return nil, err
	}
	return in.read(raw, false)
}

// invalidUTF8 returns the byte offset of the first invalid UTF-8 sequence
// in b, or -1 when b is valid UTF-8.
func invalidUTF8(b []byte) int {
	if utf8.Valid(b) {
		return -1
	}
	off := 0
	for off < len(b) {
		r, n := utf8.DecodeRune(b[off:])
		if r == utf8.RuneError && n == 1 {
			return off
		}
		off += n
	}
	return -1
}

// precheck is the byte-level stages: size cap, UTF-8, DOCTYPE.
func (in *Ingress) precheck(raw []byte) error {
	if len(raw) == 0 {
		return fail(failure.StageSize, failure.ErrEmpty, failure.Diagnostic{Stage: failure.StageSize, Msg: "empty frame"})
	}
	if len(raw) > in.maxBytes {
		return fail(failure.StageSize, failure.ErrTooLarge,
			failure.Diagnostic{Stage: failure.StageSize, Msg: fmt.Sprintf("%d bytes exceed the cap of %d", len(raw), in.maxBytes)})
	}
	if off := invalidUTF8(raw); off >= 0 {
		return fail(failure.StageParse, failure.ErrEncoding,
			failure.Diagnostic{Stage: failure.StageParse, Msg: fmt.Sprintf("invalid UTF-8 at byte offset %d", off)})
	}
	if hasDoctype(raw) {
		return fail(failure.StageParse, failure.ErrDoctype,
			failure.Diagnostic{Stage: failure.StageParse, Msg: "document type declarations are rejected (no DTDs, no entities)"})
	}
	return nil
}

// ReadCanonical is Read for bytes the caller guarantees are already
// exclusive C14N — the envelopes the pump builds with AppendEnvelope around a
// payload whose xmlpipe.PayloadType.Canonical is true. Every stage runs (size, UTF-8,
// DOCTYPE, parse, envelope validation, extraction, thread check) except the
// C14N pass: Canonical is raw itself (no proof, no copy), and the caller must
// not modify raw afterwards. If the bytes needed a repair or a new thread id,
// the C14N pass runs as in Read.
func (in *Ingress) ReadCanonical(raw []byte) (*Inbound, error) {
	if err := in.precheck(raw); err != nil {
		return nil, err
	}
	return in.read(raw, true)
}

// read is the parse and extract stages after the byte checks.
func (in *Ingress) read(raw []byte, canonical bool) (*Inbound, error) {
	doc, diags, err := parseOrRepair(raw)
	if err != nil {
		return nil, err
	}
	m := &Inbound{doc: doc}
	m.Repaired = len(diags) > 0
	m.Diagnostics = diags
	if !m.Repaired {
		switch {
		case canonical:
			m.Canonical = raw
		case isExcC14N(raw):
			m.Canonical = bytes.Clone(raw) // Read's caller may reuse raw
		}
	}
	if err := in.extract(m); err != nil {
		doc.Free()
		return nil, err
	}
	return m, nil
}

// parseOrRepair is stages 2–3: a strict parse, and only when it fails the repair
// path (lexical pre-fix, libxml2 recover, C14N, strict re-parse of the canonical
// bytes). diags is non-empty exactly when a repair happened.
func parseOrRepair(raw []byte) (*lx.Doc, []failure.Diagnostic, error) {
	const strict = lx.OptNoNet | lx.OptNoBlanks
	doc, errs := lx.Parse(raw, strict)
	if doc != nil && !errs.Severe() && !doc.HasDTD() {
		return doc, nil, nil
	}
	if doc != nil && doc.HasDTD() {
		doc.Free()
		return nil, nil, fail(failure.StageParse, failure.ErrDoctype, failure.Diagnostic{Stage: failure.StageParse, Msg: "document type declarations are rejected"})
	}
	doc.Free()
	diags := diagsOf(failure.StageParse, errs)
	fixed, fixes := LexFix(raw)
	diags = append(diags, fixes...)
	rdoc, rerrs := lx.Parse(fixed, strict|lx.OptRecover)
	if rdoc == nil || rdoc.Root().IsZero() {
		rdoc.Free()
		return nil, nil, fail(failure.StageRepair, failure.ErrMalformed, append(diags, diagsOf(failure.StageRepair, rerrs)...)...)
	}
	if rdoc.HasDTD() {
		rdoc.Free()
		return nil, nil, fail(failure.StageParse, failure.ErrDoctype, failure.Diagnostic{Stage: failure.StageParse, Msg: "document type declarations are rejected"})
	}
	canon, cerr := rdoc.C14N(lx.Node{}, lx.C14NExc10, false, nil)
	rdoc.Free()
	if cerr != nil {
		return nil, nil, fail(failure.StageRepair, failure.ErrMalformed, append(diags, failure.Diagnostic{Stage: failure.StageRepair, Msg: cerr.Error()})...)
	}
	doc, errs = lx.Parse(canon, strict)
	if doc == nil || errs.Severe() {
		doc.Free()
		return nil, nil, fail(failure.StageRepair, failure.ErrMalformed, append(diags, diagsOf(failure.StageRepair, errs)...)...)
	}
	diags = append(diags, failure.Diagnostic{Stage: failure.StageRepair, Msg: "message was repaired; repaired form: " + truncate(string(canon), 512)})
	return doc, diags, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// extract is stage 5 (envelope validation, payload extraction, thread
// assignment) and stage 4 (C14N, after the thread id is settled so the canonical
// bytes are what is actually processed). The C14N pass is skipped when read
// already set m.Canonical (the input was canonical) and the thread id is kept.
func (in *Ingress) extract(m *Inbound) error {
	if root := m.doc.Root(); root.NamespaceIs(schemas.PrivilegedNS) {
		return fail(failure.StageEnvelope, failure.ErrPrivileged, failure.Diagnostic{Stage: failure.StageEnvelope,
			Msg: fmt.Sprintf("privileged root <%s> arrived on a regular channel: dropped (security event)", root.Name())})
	}
	if root := m.doc.Root(); root.NamespaceIs(EnvelopeNS) && root.NameIs("message") {
		n := 0
		for c := root.FirstElement().NextElement(); !c.IsZero(); c = c.NextElement() {
			n++
		}
		if n > 1 {
			return fail(failure.StageExtract, failure.ErrMultiplePayloads, failure.Diagnostic{Stage: failure.StageExtract,
				Msg: fmt.Sprintf("%d payload elements found; exactly one is allowed", n)})
		}
	}
	if errs := in.envelope.Validate(m.doc); errs != nil {
		return fail(failure.StageEnvelope, failure.ErrEnvelope, diagsOf(failure.StageEnvelope, errs)...)
	}
	root := m.doc.Root()
	meta := root.FirstElement()
	var threadNode lx.Node
	for c := meta.FirstElement(); !c.IsZero(); c = c.NextElement() {
		if !c.NamespaceIs(EnvelopeNS) {
			if c.NameIs(inReplyToName) && c.NamespaceIs(schemas.CoreNS) {
				m.InReplyTo = c.TextFast()
			}
			continue
		}
		switch {
		case c.NameIs("from"):
			m.From = internText(c)
		case c.NameIs("to"):
			m.To = internText(c)
		case c.NameIs("thread"):
			if v, ok := c.TextView(); ok {
				m.Thread = strings.Clone(strings.TrimSpace(v))
			} else {
				m.Thread = strings.TrimSpace(c.TextFast())
			}
			threadNode = c
		}
	}
	if m.From == "" {
		return fail(failure.StageExtract, failure.ErrEnvelope, failure.Diagnostic{Stage: failure.StageExtract, Msg: "missing <from> in <meta>"})
	}
	if m.Thread == "" {
		return fail(failure.StageExtract, failure.ErrEnvelope, failure.Diagnostic{Stage: failure.StageExtract, Msg: "missing <thread> in <meta>"})
	}
	n := 0
	for c := meta.NextElement(); !c.IsZero(); c = c.NextElement() {
		n++
		m.payload = c
	}
	switch {
	case n == 0:
		return fail(failure.StageExtract, failure.ErrNoPayload, failure.Diagnostic{Stage: failure.StageExtract, Msg: "no payload element found inside <message> (comments and processing instructions are not payloads)"})
	case n > 1:
		return fail(failure.StageExtract, failure.ErrMultiplePayloads, failure.Diagnostic{Stage: failure.StageExtract, Msg: fmt.Sprintf("%d payload elements found; exactly one is allowed", n)})
	}
	m.PayloadName = names.get(m.payload.NameView())
	m.PayloadNS = names.get(m.payload.NamespaceView())
	if m.PayloadNS == EnvelopeNS {
		return fail(failure.StageExtract, failure.ErrPayloadNamespace, failure.Diagnostic{Stage: failure.StageExtract, Line: m.payload.Line(),
			Msg: fmt.Sprintf("payload <%s> is in the envelope namespace; declare xmlns=\"\" or its own namespace", m.PayloadName)})
	}
	replaced := !IsThreadID(m.Thread)
	if replaced {
		old := m.Thread
		m.Thread = NewThreadID()
		threadNode.SetText(m.Thread)
		m.Diagnostics = append(m.Diagnostics, failure.Diagnostic{Stage: failure.StageThread,
			Msg: fmt.Sprintf("Invalid external thread ID '%s' — replaced with new root thread", truncate(old, 80))})
	}
	if m.Canonical == nil || replaced {
		canon, err := m.doc.C14N(lx.Node{}, lx.C14NExc10, false, nil)
		if err != nil {
			return fail(failure.StageC14N, failure.ErrMalformed, failure.Diagnostic{Stage: failure.StageC14N, Msg: err.Error()})
		}
		m.Canonical = canon
	}
	m.payloadStart = payloadOffset(m.Canonical)
	return nil
}

// internText returns the trimmed text of a <from>/<to> element, interned:
// the same few names arrive on every message, so they are not copied again.
func internText(n lx.Node) string {
	if v, ok := n.TextView(); ok {
		return names.get(strings.TrimSpace(v))
	}
	return strings.TrimSpace(n.TextFast())
}

// PayloadBytes returns the exclusive C14N of the payload element alone. It is
// cut from the canonical envelope (the payload is its last child, so it ends
// right before the root's end tag: "</message>", or "</ns0:message>" in a
// prefixed envelope as Python's ElementTree writes one), minus the xmlns=""
// a no-namespace payload needs only inside the envelope: the same bytes as
// canonicalising the subtree, for one C14N pass instead of two.
func (m *Inbound) PayloadBytes() ([]byte, error) {
	if end := payloadEnd(m.Canonical); m.payloadStart > 0 && end > m.payloadStart {
		b := m.Canonical[m.payloadStart:end]
		if m.PayloadNS == "" {
			n := 1 + len(m.PayloadName)
			const empty = ` xmlns=""`
			if len(b) > n+len(empty) && string(b[n:n+len(empty)]) == empty {
				out := make([]byte, 0, len(b)-len(empty))
				out = append(out, b[:n]...)
				return append(out, b[n+len(empty):]...), nil
			}
		}
		return b, nil
	}
	b, err := m.doc.C14N(m.payload, lx.C14NExc10, false, nil)
	if err != nil {
		return nil, fail(failure.StageC14N, failure.ErrMalformed, failure.Diagnostic{Stage: failure.StageC14N, Msg: err.Error()})
	}
	return b, nil
}

// PayloadLine returns the source line of the payload element (for diagnostics).
func (m *Inbound) PayloadLine() int { return m.payload.Line() }

// Floor measures the libxml2 floor of one message in this process: strict
// parse, envelope validation and payload validation of the same document, n
// times on one goroutine locked to its OS thread. It returns the mean CPU time
// per message (the thread's CPU clock, so time spent descheduled on a busy
// machine does not count; wall time where that clock is unavailable).
// Benchmarks compare the whole chain's CPU cost with it (DESIGN.md §9: within
// 2.5×).
func (in *Ingress) Floor(raw []byte, pt *xmlpipe.PayloadType, n int) (time.Duration, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := threadCPU()
	for i := 0; i < n; i++ {
		doc, errs := lx.Parse(raw, lx.OptNoNet|lx.OptNoBlanks)
		if doc == nil || errs.Severe() {
			doc.Free()
			return 0, fmt.Errorf("floor: %w", errs)
		}
		if e := in.envelope.Validate(doc); e != nil {
			doc.Free()
			return 0, fmt.Errorf("floor: %w", e)
		}
		if e := payloadschema.Of(pt).ValidateElement(doc.Root().FirstElement().NextElement()); e != nil {
			doc.Free()
			return 0, fmt.Errorf("floor: %w", e)
		}
		doc.Free()
	}
	return (threadCPU() - start) / time.Duration(max(n, 1)), nil
}

// threadCPU returns the calling thread's CPU time, or the monotonic wall
// clock where the thread clock is unavailable.
func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return time.Duration(time.Since(processStart))
	}
	return time.Duration(ts.Nano())
}

// processStart anchors threadCPU's wall-clock fallback.
var processStart = time.Now()
