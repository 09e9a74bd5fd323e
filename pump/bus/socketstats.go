package bus

import "sync/atomic"

// SocketStats counts what the server's WebSockets wrote since it started:
// Frames is the data frames (every event, reply and envelope a socket
// sent), Writes the writes to the network they took — each a TLS record
// and a system call; control frames and each socket's upgrade response
// count as writes too. Frames per write above 1 is the writers' batching at
// work (see batchConn).
type SocketStats struct {
	Frames int64 `json:"frames"`
	Writes int64 `json:"writes"`
}

// socketCounters are a server's SocketStats, updated by its sockets.
type socketCounters struct {
	frames, writes atomic.Int64
}

// SocketStats returns the frames and network writes of every socket so far.
func (s *Server) SocketStats() SocketStats {
	return SocketStats{Frames: s.sockets.frames.Load(), Writes: s.sockets.writes.Load()}
}
