package mcpclient

import (
	"bufio"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
)

// TestJSONLines: only JSON-RPC messages reach the SDK's reader, whatever
// else a server writes on its stdout and however its reads are cut; a line
// too long to judge is passed on whole.
func TestJSONLines(t *testing.T) {
	msg := `{"jsonrpc":"2.0","id":1,"result":{}}`
	long := `{"jsonrpc":"2.0","id":2,"result":{"text":"` + strings.Repeat("x", 40) + `"}}` // under max, over the buffer
	garbage := strings.Repeat("y", 150)                                                    // over max
	for _, tc := range []struct {
		name, in, want string
		skipped        []string
	}{
		{"messages only", msg + "\n" + msg + "\n", msg + "\n" + msg + "\n", nil},
		{"banner and debug", "server ready\n" + msg + "\ndebug: x\n", msg + "\n", []string{"server ready", "debug: x"}},
		{"JSON log line", `{"level":"info","msg":"hi"}` + "\n" + msg + "\n", msg + "\n", []string{`{"level":"info","msg":"hi"}`}},
		{"blank and CRLF", "\n\r\n" + msg + "\r\n", msg + "\r\n", nil},
		{"a batch", `[` + msg + `]` + "\n", `[` + msg + `]` + "\n", nil},
		{"last line without end", "noise\n" + msg, msg, []string{"noise"}},
		{"broken JSON", "{\"jsonrpc\":\n" + msg + "\n", msg + "\n", []string{`{"jsonrpc":`}},
		{"long message", "x\n" + long + "\n" + msg + "\n", long + "\n" + msg + "\n", []string{"x"}},
		{"too long to judge", garbage + "\n" + msg + "\n", garbage + "\n" + msg + "\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var skipped []string
			j := newJSONLines(nil, 100, func(line []byte, n int) {
				skipped = append(skipped, string(line))
				if n != len(skipped) {
					t.Errorf("skip %q told n=%d, want %d", line, n, len(skipped))
				}
			})
			// Reads cut anywhere, lines longer than the buffer.
			j.br = bufio.NewReaderSize(iotest.OneByteReader(strings.NewReader(tc.in)), 16)
			got, err := io.ReadAll(j)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("passed on (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.skipped, skipped); diff != "" {
				t.Errorf("skipped (-want +got):\n%s", diff)
			}
		})
	}
}
