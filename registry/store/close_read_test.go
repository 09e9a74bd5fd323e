package store

import (
	"context"
	"errors"
	"sync"
	"testing"
)

// TestReadsRacingClose: a read of the store's own tables (a user, a
// session) made while Close runs gets an error, never a nil connection
// pool: Close used to clear the pool the reads use without a lock.
func TestReadsRacingClose(t *testing.T) {
	s, _ := openTest(t, Options{})
	ctx := context.Background()
	started := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				if n == 10 && i == 0 {
					close(started)
				}
				_, err := s.GetUser(ctx, "nobody")
				if err != nil && !errors.Is(err, ErrNotFound) {
					return // closed: ErrClosed, or the pool's own "database is closed"
				}
			}
		}()
	}
	<-started
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	wg.Wait()
}
