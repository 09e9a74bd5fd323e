package store

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"time"
)

// SlotRow is the durable form of one context-buffer slot: a message held in
// a thread's history.
type SlotRow struct {
	// Thread is the thread the slot belongs to.
	Thread string
	// Index orders the slots of a thread.
	Index int
	// From and To are the message's sender and addressee.
	From, To string
	// PayloadType is the payload's Go type or root tag.
	PayloadType string
	// Raw holds the message bytes.
	Raw []byte
	// Time is kept exactly (Unix nanoseconds, loaded in UTC).
	Time time.Time
	// OwnName is the receiving agent's own name.
	OwnName string
	// IsSelfCall marks an agent's message to itself.
	IsSelfCall bool
	// InReplyTo is the correlation ref the message answers ("" for none).
	InReplyTo string
	// Seq is the journal seq of the message whose handling recorded the
	// slot (registry.Slot.Seq; 0 for none).
	Seq int64
}

// PutSlot enqueues an insert-or-replace of the slot (thread, index). Raw is
// copied. Like thread rows, slot writes sharing a batch are coalesced to
// their final state.
func (s *Store) PutSlot(r SlotRow) error {
	r.Raw = bytes.Clone(r.Raw)
	return s.putSlot(r, false)
}

// AppendSlot is PutSlot for a slot a thread's history appended: index 0
// begins the history, so no slot (and no context segment) of the thread is
// committed but those an earlier DeleteSlots (DeleteSegments) deletes. A
// history begun and deleted within one batch then costs no statement at
// all, not even its DELETEs.
func (s *Store) AppendSlot(r SlotRow) error {
	r.Raw = bytes.Clone(r.Raw)
	return s.putSlot(r, r.Index == 0)
}

// AppendSharedSlot is AppendSlot that keeps r.Raw instead of copying it:
// the caller hands the bytes over and neither it nor anyone else modifies
// them again (a context buffer's slot, whose bytes are the pump's canonical
// envelope, shared with the journal and the buffer). Copying them cost the
// bus an allocation and a copy of the message per slot persisted.
func (s *Store) AppendSharedSlot(r SlotRow) error { return s.putSlot(r, r.Index == 0) }

// putSlot enqueues the upsert of r (fresh: it begins its thread's history),
// keeping r.Raw: callers that do not own it copy it first.
func (s *Store) putSlot(r SlotRow, fresh bool) error {
	if r.Thread == "" || r.Index < 0 {
		return fmt.Errorf("%w: slot row needs a thread and index >= 0 (thread %q, index %d)", ErrInvalid, r.Thread, r.Index)
	}
	at, err := encodeTime("time", r.Time)
	if err != nil {
		return err
	}
	raw := r.Raw
	if raw == nil {
		raw = []byte{}
	}
	// The row key: the thread id alone names its first slot (a thread's
	// history mostly has one, and the concatenation was an allocation per
	// slot); thread ids hold no NUL, so no other slot's key is the same.
	key := r.Thread
	if r.Index != 0 {
		key = r.Thread + "\x00" + strconv.Itoa(r.Index)
	}
	return s.enqueueAsync(&op{kind: opPut, name: "put slot", table: slotsTable, fresh: fresh,
		key: key, group: r.Thread,
		row: []any{r.Thread, int64(r.Index), r.From, r.To, r.PayloadType, raw, at, r.OwnName, r.IsSelfCall, r.InReplyTo, r.Seq}})
}

// DeleteSlots enqueues the deletion of every slot of thread.
func (s *Store) DeleteSlots(thread string) error {
	return s.enqueueAsync(&op{kind: opDelete, name: "delete slots", table: slotsTable,
		groups: []string{thread}})
}

// LoadSlots returns every committed slot ordered by thread and index:
// each thread's slots 0…n-1. Slots beyond a hole in a thread's indexes
// (slot writes an older build lost to a full disk while later ones
// committed: storage_failure.go) are left out, logged and deleted, so that
// the context buffer restores the history up to the hole instead of
// refusing the start.
func (s *Store) LoadSlots() ([]SlotRow, error) {
	rows, err := s.loadSlots()
	if err != nil {
		return nil, err
	}
	kept, holes := slotsUpToHoles(rows)
	if len(holes) == 0 {
		return rows, nil
	}
	for _, h := range holes {
		s.log.Warn("store: a thread's context history has a hole; the slots beyond it are dropped",
			"thread", h.thread, "missing", h.missing, "dropped", h.dropped)
	}
	err = s.Write(context.Background(), "drop slots beyond a hole", func(tx *Tx) error {
		for _, h := range holes {
			if _, err := tx.Exec(`DELETE FROM slots WHERE thread = ? AND idx >= ?`, h.thread, h.missing); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: drop slots beyond a hole: %w", err)
	}
	return kept, nil
}

// slotHole is a thread whose slot index missing is absent while dropped
// slots above it are stored.
type slotHole struct {
	thread           string
	missing, dropped int
}

// slotsUpToHoles keeps, of rows ordered by thread and index, each
// thread's slots 0…n-1 before its first missing index.
func slotsUpToHoles(rows []SlotRow) ([]SlotRow, []slotHole) {
	var holes []slotHole
	kept := rows[:0:0]
	next, thread := 0, ""
	for _, r := range rows {
		if r.Thread != thread {
			thread, next = r.Thread, 0
		}
		if r.Index == next {
			kept = append(kept, r)
			next++
			continue
		}
		if n := len(holes); n > 0 && holes[n-1].thread == r.Thread {
			holes[n-1].dropped++
		} else {
			holes = append(holes, slotHole{thread: r.Thread, missing: next, dropped: 1})
		}
	}
	if len(holes) == 0 {
		return rows, nil
	}
	return kept, holes
}

// loadSlots reads every committed slot ordered by thread and index.
func (s *Store) loadSlots() ([]SlotRow, error) {
	return load(context.Background(), s, "load slots", `SELECT thread, idx, from_name, to_name, payload_type,
		raw, time_ns, own_name, is_self_call, in_reply_to, seq FROM slots ORDER BY thread, idx`, nil,
		func(rows *sql.Rows) (SlotRow, error) {
			var (
				r  SlotRow
				at sql.NullInt64
			)
			err := rows.Scan(&r.Thread, &r.Index, &r.From, &r.To, &r.PayloadType, &r.Raw, &at, &r.OwnName,
				&r.IsSelfCall, &r.InReplyTo, &r.Seq)
			r.Time = decodeTime(at)
			return r, err
		})
}
