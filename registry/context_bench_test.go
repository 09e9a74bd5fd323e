package registry

import (
	"strconv"
	"testing"
)

// BenchmarkContextAppend measures recording one hop (about 600 bytes of
// canonical payload) on one of 100 threads.
func BenchmarkContextAppend(b *testing.B) {
	buf, err := NewContextBuffer(ContextConfig{MaxSlotsPerThread: 1 << 30})
	if err != nil {
		b.Fatal(err)
	}
	ids := make([]string, 100)
	for i := range ids {
		ids[i] = "thread-" + strconv.Itoa(i)
	}
	raw := make([]byte, 600)
	payload := &TestPayload{Message: "hello"}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := buf.Append(Slot{ThreadID: ids[i%len(ids)], From: "greeter", To: "shouter", Payload: payload, Raw: raw}); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
