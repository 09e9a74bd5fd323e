package console

import (
	"strings"
	"testing"
)

// FuzzLiveStream feeds a model's text (untrusted), cut into pieces, through
// a terminal session's live rendering and then the answer: nothing panics,
// and every line of the answer reaches the screen.
func FuzzLiveStream(f *testing.F) {
	f.Add("Rain on tin roofs\nhums softly.", []byte{3, 11}, 80)
	f.Add("\x1b[2J\r\n\t\u200b中文字\n", []byte{1}, 4)
	f.Add("", []byte{}, 0)
	f.Fuzz(func(t *testing.T, text string, cuts []byte, width int) {
		var out strings.Builder
		o := newOutbox()
		stop := o.start(&out, false, true, func() int { return width })
		ls := newLiveStreams(o)
		rest := text
		for _, c := range cuts {
			n := min(int(c), len(rest))
			ls.delta("conv", "poet", rest[:n], false)
			rest = rest[n:]
		}
		ls.delta("conv", "poet", rest, true)
		ls.freeze()
		ls.reply("conv", "poet", text)
		ls.complete("conv")
		stop()
		for _, line := range strings.Split(text, "\n") {
			if p := printable(line); p != "" && !strings.Contains(out.String(), p) && !strings.Contains(out.String(), line) {
				t.Fatalf("line %q of the answer never shown:\n%q", line, out.String())
			}
		}
		if n := screenRows(text, width); n < 1 {
			t.Fatalf("screenRows = %d", n)
		}
	})
}
