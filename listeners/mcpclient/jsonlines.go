package mcpclient

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// jsonLines passes a stdio server's output on line by line, leaving out
// the lines that are no JSON-RPC message — a banner, a debug line, a JSON
// log line, a blank line — which the SDK's reader would take for a broken
// connection, ending the session (a server restarted at every call that
// logs on its stdout). A line longer than max is passed on as it is, for
// the SDK's own bound to refuse.
type jsonLines struct {
	br   *bufio.Reader
	max  int
	skip func(line []byte, n int) // told of each line left out, the n-th
	n    int

	pending []byte // what is left to hand on
	long    bool   // passing on the rest of a line longer than max
	err     error  // the read error, once pending is handed on
}

func newJSONLines(r io.Reader, max int, skip func(line []byte, n int)) *jsonLines {
	return &jsonLines{br: bufio.NewReaderSize(r, 64<<10), max: max, skip: skip}
}

// Read implements io.Reader.
func (j *jsonLines) Read(p []byte) (int, error) {
	for len(j.pending) == 0 {
		if j.err != nil {
			return 0, j.err
		}
		j.fill()
	}
	n := copy(p, j.pending)
	j.pending = j.pending[n:]
	return n, nil
}

// fill reads the next line into pending, unless it is to be left out.
func (j *jsonLines) fill() {
	var line []byte
	for {
		chunk, err := j.br.ReadSlice('\n')
		if j.long {
			// The rest of a line too long to judge: on as it is.
			j.pending = append(j.pending[:0], chunk...)
			if !errors.Is(err, bufio.ErrBufferFull) {
				j.long, j.err = false, err
			}
			return
		}
		line = append(line, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			if len(line) > j.max {
				j.pending, j.long = line, true
				return
			}
			continue
		}
		j.err = err
		break
	}
	if len(bytes.TrimSpace(line)) == 0 {
		return // a blank line (or none): nothing to judge
	}
	if isMessage(line) {
		j.pending = line
		return
	}
	j.n++
	if j.skip != nil {
		j.skip(bytes.TrimRight(line, "\r\n"), j.n)
	}
}

// isMessage reports whether line holds a JSON-RPC message: an object with
// a jsonrpc member, or an array (a batch, judged by the SDK).
func isMessage(line []byte) bool {
	t := bytes.TrimSpace(line)
	if len(t) == 0 {
		return false
	}
	if t[0] == '[' {
		return true
	}
	var m struct {
		JSONRPC *json.RawMessage `json:"jsonrpc"`
	}
	return t[0] == '{' && json.Unmarshal(t, &m) == nil && m.JSONRPC != nil
}
