package organism

import (
	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// ExpiryNoted persists the note of a removed context history (the
// registry.ExpirySink of a durable organism), so that a conversation
// continued after a restart is still told its earlier history is gone.
func (k storeSinks) ExpiryNoted(n registry.ExpiryNote) {
	k.check("put expiry", k.s.PutExpiry(store.ExpiryRow{Thread: n.ThreadID, Reason: string(n.Reason),
		LastActive: n.LastActive, Removed: n.Removed, TTL: n.TTL, MaxThreads: n.MaxThreads}))
}

// ExpiryDropped deletes a thread's note.
func (k storeSinks) ExpiryDropped(id string) { k.check("delete expiry", k.s.DeleteExpiry(id)) }

// restoreExpiries loads the persisted notes of removed histories into cb,
// after its slots.
func (k *storeSinks) restoreExpiries(cb *registry.ContextBuffer) error {
	rows, err := k.s.LoadExpiries()
	if err != nil {
		return err
	}
	notes := make([]registry.ExpiryNote, len(rows))
	for i, r := range rows {
		notes[i] = registry.ExpiryNote{ThreadID: r.Thread, Expiry: registry.Expiry{Reason: registry.ExpiryReason(r.Reason),
			LastActive: r.LastActive, Removed: r.Removed, TTL: r.TTL, MaxThreads: r.MaxThreads}}
	}
	cb.RestoreExpiries(notes)
	return nil
}

var _ registry.ExpirySink = storeSinks{}
