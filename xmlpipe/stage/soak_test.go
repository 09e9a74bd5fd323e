package stage

import (
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

func rssBytes(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Skip("no /proc/self/statm")
	}
	f := strings.Fields(string(b))
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

// TestSoakLibxml2Memory pushes 200 000 messages — valid, repaired, invalid
// envelopes and payloads that fail their schema — through the stages and
// checks the process RSS does not grow after warm-up (every libxml2 document,
// error list and validation context is freed). Run with XMLPIPE_SOAK=1
// (make soak).
func TestSoakLibxml2Memory(t *testing.T) {
	if os.Getenv("XMLPIPE_SOAK") == "" {
		t.Skip("set XMLPIPE_SOAK=1 (make soak)")
	}
	in := newTestIngress(t)
	pt, err := xmlpipe.PayloadTypeOf[benchPayload]()
	if err != nil {
		t.Fatal(err)
	}
	inputs := [][]byte{
		benchEnvelope,
		[]byte(envelopeWith(`<from>a</from><thread>x</thread>`, `<benchPayload xmlns=""><Message>fish & chips</Message><OriginalSender>b</OriginalSender></benchPayload>`)),
		[]byte(envelopeWith(`<from>a</from><thread>550e8400-e29b-41d4-a716-446655440000</thread>`, `<benchPayload xmlns=""><Wrong/></benchPayload>`)),
		[]byte(`<message><unclosed>`),
		[]byte(`<!DOCTYPE x><x/>`),
	}
	run := func(n int) {
		for i := 0; i < n; i++ {
			m, err := in.Read(inputs[i%len(inputs)])
			if err != nil {
				continue
			}
			_, _, _ = m.Decode(pt)
			m.Close()
		}
	}
	run(20000)
	runtime.GC()
	before := rssBytes(t)
	run(200000)
	runtime.GC()
	after := rssBytes(t)
	t.Logf("RSS after warm-up %.1f MB, after 200 000 more messages %.1f MB", float64(before)/1e6, float64(after)/1e6)
	if after-before > 8<<20 {
		t.Fatalf("RSS grew by %.1f MB over 200 000 messages", float64(after-before)/1e6)
	}
}
