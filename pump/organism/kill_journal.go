package organism

import (
	"context"
	"fmt"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// RecordKill implements pump.KillJournal: the kill of conv is committed to
// the store's killed conversations when it returns.
func (j storeJournal) RecordKill(conv string) error {
	if err := j.s.RecordKill(context.Background(), store.Kill{Conversation: conv}); err != nil {
		return fmt.Errorf("organism: %w", err)
	}
	return nil
}

// Killed implements pump.KillJournal: whether conversation conv was
// killed. A store that never recorded a kill answers without a query.
func (j storeJournal) Killed(conv string) (bool, error) {
	killed, err := j.s.Killed(conv)
	if err != nil {
		return false, fmt.Errorf("organism: killed %s: %w", conv, err)
	}
	return killed, nil
}

// KilledThread implements pump.ThreadKillJournal: whether the conversation
// thread belonged to (by the journal) was killed.
func (j storeJournal) KilledThread(thread string) (string, bool, error) {
	conv, killed, err := j.s.KilledThread(thread)
	if err != nil {
		return "", false, fmt.Errorf("organism: killed %s: %w", thread, err)
	}
	return conv, killed, nil
}

var (
	_ pump.KillJournal       = storeJournal{}
	_ pump.ThreadKillJournal = storeJournal{}
)
