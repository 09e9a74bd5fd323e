package pump

import (
	"slices"
	"sync"
	"time"
)

// memEras is a ProfileEraJournal in memory.
type memEras struct {
	mu   sync.Mutex
	eras []ProfileEra
}

// ProfileEras implements ProfileEraJournal.
func (m *memEras) ProfileEras() ([]ProfileEra, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.eras), nil
}

// RecordProfileEra implements ProfileEraJournal.
func (m *memEras) RecordProfileEra(e ProfileEra) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.eras = slices.DeleteFunc(m.eras, func(x ProfileEra) bool { return x.Since.Equal(e.Since) })
	m.eras = append(m.eras, e)
	slices.SortFunc(m.eras, func(a, b ProfileEra) int { return a.Since.Compare(b.Since) })
	return nil
}

// DropProfileEras implements ProfileEraJournal.
func (m *memEras) DropProfileEras(since []time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.eras = slices.DeleteFunc(m.eras, func(x ProfileEra) bool {
		return slices.ContainsFunc(since, x.Since.Equal)
	})
	return nil
}

// len is how many eras m holds.
func (m *memEras) len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.eras)
}
