package pump

import (
	"context"
	"fmt"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// Envelope is a message a sender puts into the pump from outside a handler
// (a transport, a gateway, the console, the organism's own calls): the
// <meta> the ingress reads and the encoded payload element. SendEnvelope
// builds and injects it; every such sender goes through it.
type Envelope struct {
	// From is the sender (<from>). The ingress refuses a reserved name, and
	// with As set, a From other than As.From (ErrForgedSender).
	From string
	// To is the listener it goes to (<to>).
	To string
	// Thread is the thread it travels on: a fresh thread id begins a
	// conversation, the id of a live or ended one continues it. "" is a new
	// conversation on a thread id SendEnvelope chooses (with As set, it
	// marks it As.FreshThread).
	Thread string
	// Payload is the encoded payload element: PayloadType.AppendPayload's
	// output (then the envelope is exclusive C14N as built), or XML the
	// ingress canonicalises and validates like any other.
	Payload []byte
	// As, when set, is the principal the message is injected as (InjectAs):
	// the session, user or gateway it comes from, whose conversations it
	// may continue.
	As *Principal
}

// SendEnvelope builds e's envelope and injects it, waiting for the ingress
// stages as InjectWait does (InjectAs when e.As is set): it returns the
// thread the message travels on, or the message's *failure.Failure. out
// receives the events of the conversation (nil: none).
func (p *Pump) SendEnvelope(ctx context.Context, e Envelope, out Outlet) (string, error) {
	ctx, raw, err := e.prepare(ctx)
	if err != nil {
		return "", err
	}
	return p.InjectWait(ctx, raw, out)
}

// SendEnvelopeAccepted is SendEnvelope that also returns the canonical
// envelope the pump accepted: the bytes the journal records and every
// event of the message carries. It is returned also when no event
// carries it yet — a message the delivery gate held for a human or
// refused.
func (p *Pump) SendEnvelopeAccepted(ctx context.Context, e Envelope, out Outlet) (thread string, env []byte, err error) {
	ctx, raw, err := e.prepare(ctx)
	if err != nil {
		return "", nil, err
	}
	// Set on the ingress goroutine before the work's done is signalled,
	// which InjectWait receives: read after it returns.
	ctx = context.WithValue(ctx, acceptedKey{}, func(b []byte) { env = b })
	thread, err = p.InjectWait(ctx, raw, out)
	if err != nil {
		return thread, nil, err
	}
	return thread, env, nil
}

// acceptedKey carries SendEnvelopeAccepted's receiver of the canonical
// envelope to the work it admits.
type acceptedKey struct{}

// acceptedOf returns the receiver SendEnvelopeAccepted put in ctx, or nil.
func acceptedOf(ctx context.Context) func([]byte) {
	f, _ := ctx.Value(acceptedKey{}).(func([]byte))
	return f
}

// prepare mints e's thread when it has none, builds its envelope and, when
// e.As is set, puts the principal in ctx as InjectAs does.
func (e Envelope) prepare(ctx context.Context) (context.Context, []byte, error) {
	fresh := e.Thread == ""
	if fresh {
		e.Thread = stage.NewThreadID()
	}
	raw := stage.AppendEnvelope(make([]byte, 0, len(e.Payload)+256), e.From, e.To, e.Thread, e.Payload)
	if e.As == nil {
		return ctx, raw, nil
	}
	who := *e.As
	if who.From == "" {
		return ctx, nil, fmt.Errorf("pump: inject as: %w: empty principal", failure.ErrForbiddenSender)
	}
	who.FreshThread = who.FreshThread || fresh
	return context.WithValue(ctx, principalKey{}, &who), raw, nil
}

// SendEnvelopeQueued is SendEnvelope that does not wait for the message's
// journal record to commit: it returns once the record is queued for the
// journal, with its seq (0 when the pump has no SeqJournal, or did not
// journal the message). The caller waits for the record's durability as
// it needs to (with a DurableJournal, its WaitDurable forces the commit at
// once; a caller that can wait for the next one need not force it: the
// federation gateway's acknowledgement of a call, whose conversation's
// answer forces the commit that carries the call too).
func (p *Pump) SendEnvelopeQueued(ctx context.Context, e Envelope) (string, int64, error) {
	ctx, raw, err := e.prepare(ctx)
	if err != nil {
		return "", 0, err
	}
	return p.injectQueued(ctx, raw, nil)
}
