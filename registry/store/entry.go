package store

import (
	"errors"
	"fmt"
	"time"
)

// Direction tells whether a journaled message was received or sent.
type Direction uint8

// The journal directions. The zero value is invalid so that a forgotten
// direction is an error, not a silent default.
const (
	// Inbound is a message received by the organism or a listener.
	Inbound Direction = iota + 1
	// Outbound is a message sent by the organism or a listener.
	Outbound
)

// directionNames are the stored names, indexed by Direction (an array, not
// a map: the writer names every journaled row's direction and kind).
var directionNames = [...]string{Inbound: "inbound", Outbound: "outbound"}

// String returns the stored name ("inbound", "outbound") or "Direction(n)".
func (d Direction) String() string {
	if d.Valid() {
		return directionNames[d]
	}
	return fmt.Sprintf("Direction(%d)", uint8(d))
}

// Valid reports whether d is Inbound or Outbound.
func (d Direction) Valid() bool { return d >= Inbound && d <= Outbound }

// ParseDirection is the inverse of Direction.String.
func ParseDirection(s string) (Direction, error) {
	for d := Inbound; d <= Outbound; d++ {
		if directionNames[d] == s {
			return d, nil
		}
	}
	return 0, fmt.Errorf("%w: direction %q", ErrInvalid, s)
}

// Kind classifies a journaled message.
type Kind uint8

// The journal kinds. The zero value is invalid.
const (
	// Message is an ordinary validated envelope.
	Message Kind = iota + 1
	// Huh is a <huh> error envelope.
	Huh
	// SystemError is a <SystemError> envelope.
	SystemError
	// DeadLetter is input that could not be delivered at all (it may lack a
	// thread and sender).
	DeadLetter
	// Refusal is a structured <refusal> sent to the sender of a message a
	// constitution rule or a human refused.
	Refusal
	// Decision is a governance decision about a message (a constitution
	// rule's deny or review, a human's approval or denial, a timeout): its
	// bytes describe the decision.
	Decision
)

// kindNames are the stored names, indexed by Kind.
var kindNames = [...]string{Message: "message", Huh: "huh", SystemError: "system-error", DeadLetter: "dead-letter",
	Refusal: "refusal", Decision: "decision"}

// String returns the stored name ("message", "huh", "system-error",
// "dead-letter", "refusal", "decision") or "Kind(n)".
func (k Kind) String() string {
	if k.Valid() {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Valid reports whether k is one of the defined kinds.
func (k Kind) Valid() bool { return k >= Message && k <= Decision }

// ParseKind is the inverse of Kind.String.
func ParseKind(s string) (Kind, error) {
	for k := Message; k <= Decision; k++ {
		if kindNames[k] == s {
			return k, nil
		}
	}
	return 0, fmt.Errorf("%w: kind %q", ErrInvalid, s)
}

// Entry is one journal entry: a canonical envelope and where it went.
type Entry struct {
	// Seq is the sequence number, assigned when the entry is enqueued
	// (AppendSeq returns it): strictly increasing from 1 in queue order,
	// without gaps. It is ignored on append.
	Seq int64
	// Time is when the message was journaled; Append uses Options.Clock when
	// it is zero.
	Time time.Time
	// Thread is the opaque thread UUID (required unless Kind is DeadLetter).
	Thread string
	// Conversation groups the threads of one conversation (optional).
	Conversation string
	// Direction is Inbound or Outbound (required).
	Direction Direction
	// Kind classifies the message (required).
	Kind Kind
	// From is the sender (required unless Kind is DeadLetter).
	From string
	// To is the addressee, empty for root-tag routing.
	To string
	// Listener is the listener that received or produced the message; it
	// selects the retention policy.
	Listener string
	// PayloadTag is the payload's root element name.
	PayloadTag string
	// SHA256 is the digest of Bytes; Append computes it when it is zero.
	SHA256 [32]byte
	// Bytes holds the exclusive-C14N envelope (required, non-empty). Append
	// takes ownership of it: the caller must not modify it afterwards.
	Bytes []byte
	// Diagnostics records repairs and validation details.
	Diagnostics string
	// Profile is the security profile of the thread the message was
	// journaled on: "" for the organism's implicit profile, else a profile
	// name or an intersection "a&b" (registry.NarrowProfile). With Listener
	// it selects the retention policy.
	Profile string
	// ProfileUnknown is set on read for an entry migrated from the store's
	// legacy layout, which did not record profiles: its Profile was not
	// recorded and reads as "". It is ignored on append.
	ProfileUnknown bool
}

// Validate reports a missing required field. Time and SHA256 are filled in by
// Append before validation.
func (e *Entry) Validate() error {
	var errs []error
	if e.Time.IsZero() {
		errs = append(errs, errors.New("time is zero"))
	} else if e.Time.Before(minStorableTime) || e.Time.After(maxStorableTime) {
		errs = append(errs, fmt.Errorf("time %s is outside the storable range", e.Time))
	}
	if !e.Direction.Valid() {
		errs = append(errs, fmt.Errorf("invalid direction %s", e.Direction))
	}
	if !e.Kind.Valid() {
		errs = append(errs, fmt.Errorf("invalid kind %s", e.Kind))
	}
	if e.Kind != DeadLetter {
		if e.Thread == "" {
			errs = append(errs, errors.New("thread is empty"))
		}
		if e.From == "" {
			errs = append(errs, errors.New("from is empty"))
		}
	}
	if len(e.Bytes) == 0 {
		errs = append(errs, errors.New("bytes are empty"))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: journal entry: %w", ErrInvalid, errors.Join(errs...))
	}
	return nil
}
