package registry

import (
	"fmt"
	"time"
)

// Context buffer defaults (python-reference.md §4.11, §3.5).
const (
	// DefaultMaxSlotsPerThread caps one thread's history.
	DefaultMaxSlotsPerThread = 10000
	// DefaultMaxThreads caps the number of threads with history.
	DefaultMaxThreads = 1000
	// DefaultContextTTL is how long a thread's history survives without an append.
	DefaultContextTTL = 24 * time.Hour
	// DefaultNoteTTL is how long the note of a removed history waits for
	// its conversation to go on (30 days).
	DefaultNoteTTL = 30 * 24 * time.Hour
	// MinMaxNotes is the fewest notes of removed histories that may wait
	// for their conversation to go on: the default MaxNotes is MaxThreads,
	// but no less.
	MinMaxNotes = 1000
)

// ContextConfig configures a ContextBuffer.
type ContextConfig struct {
	// MaxSlotsPerThread is how many slots one thread may hold; the next
	// append fails with ErrSlotsExceeded (default DefaultMaxSlotsPerThread).
	MaxSlotsPerThread int `yaml:"max_slots_per_thread"`
	// MaxThreads is how many threads may hold history; creating one more
	// evicts the oldest-created thread (default DefaultMaxThreads).
	MaxThreads int `yaml:"max_threads"`
	// TTL is how long a thread's history survives without an append before
	// Collect removes it (default DefaultContextTTL).
	TTL time.Duration `yaml:"ttl"`
	// NoteTTL is how long the note of a history removed (by Collect or an
	// eviction) waits for its thread's history to begin again before
	// Collect drops it (default DefaultNoteTTL): a conversation continued
	// later is not told its earlier history went.
	NoteTTL time.Duration `yaml:"note_ttl"`
	// MaxNotes is how many such notes may wait at once, the oldest dropped
	// first (default MaxThreads, at least MinMaxNotes).
	MaxNotes int `yaml:"max_notes"`
	// Clock returns the current time (default time.Now).
	Clock func() time.Time `yaml:"-"`
	// Sink, when non-nil, is told about every slot appended and every thread
	// deleted. It is called with the buffer locked and must not call back
	// into it.
	Sink SlotSink `yaml:"-"`
}

// WithDefaults returns a copy of c with every zero field set to its default.
func (c ContextConfig) WithDefaults() ContextConfig {
	if c.MaxSlotsPerThread == 0 {
		c.MaxSlotsPerThread = DefaultMaxSlotsPerThread
	}
	if c.MaxThreads == 0 {
		c.MaxThreads = DefaultMaxThreads
	}
	if c.TTL == 0 {
		c.TTL = DefaultContextTTL
	}
	if c.NoteTTL == 0 {
		c.NoteTTL = DefaultNoteTTL
	}
	if c.MaxNotes == 0 {
		c.MaxNotes = max(c.MaxThreads, MinMaxNotes)
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	return c
}

// Validate reports a configuration that cannot work. Zero values are valid
// (they take defaults).
func (c ContextConfig) Validate() error {
	switch {
	case c.MaxSlotsPerThread < 0:
		return fmt.Errorf("registry: context buffer max_slots_per_thread %d: must not be negative", c.MaxSlotsPerThread)
	case c.MaxThreads < 0:
		return fmt.Errorf("registry: context buffer max_threads %d: must not be negative", c.MaxThreads)
	case c.TTL < 0:
		return fmt.Errorf("registry: context buffer ttl %v: must not be negative", c.TTL)
	case c.NoteTTL < 0:
		return fmt.Errorf("registry: context buffer note_ttl %v: must not be negative", c.NoteTTL)
	case c.MaxNotes < 0:
		return fmt.Errorf("registry: context buffer max_notes %d: must not be negative", c.MaxNotes)
	}
	return nil
}
