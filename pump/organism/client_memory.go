package organism

import "context"

// Rememberer is an optional Backend capability: the memories agents with
// memory kept (/memory, /forget). Forget's error wraps ErrMemoryNotFound
// for an unknown id.
type Rememberer interface {
	// Memories lists the memories the user may see, newest first (best
	// first when query holds words).
	Memories(ctx context.Context, query string) ([]Memory, error)
	// Forget deletes the memory id.
	Forget(ctx context.Context, id string) (Memory, error)
}

// Memories implements Rememberer: the in-process console is the
// organism's operator and sees every user's memories.
func (l *Local) Memories(ctx context.Context, query string) ([]Memory, error) {
	return l.org.Memories(ctx, MemoryFilter{AllUsers: true, Query: query})
}

// Forget implements Rememberer.
func (l *Local) Forget(ctx context.Context, id string) (Memory, error) {
	return l.org.ForgetMemory(ctx, id, "", true, localUser)
}
