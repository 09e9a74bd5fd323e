package console

import (
	"bufio"
	"io"
	"strings"
)

// maxLineBytes bounds one input line (the pump's default message size cap).
const maxLineBytes = 1 << 20

// lineReader reads plain input lines (without "\r\n" or "\n").
type lineReader struct {
	s *bufio.Scanner
}

func newLineReader(in io.Reader) *lineReader {
	s := bufio.NewScanner(in)
	s.Buffer(make([]byte, 0, 4096), maxLineBytes)
	return &lineReader{s: s}
}

// next returns the next line, or io.EOF at the end of input.
func (r *lineReader) next() (string, error) {
	if r.s.Scan() {
		return strings.TrimSuffix(r.s.Text(), "\r"), nil
	}
	if err := r.s.Err(); err != nil {
		return "", err
	}
	return "", io.EOF
}
