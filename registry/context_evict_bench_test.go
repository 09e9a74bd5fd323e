package registry

import (
	"strconv"
	"testing"
)

// BenchmarkContextEvict measures beginning a hop's history at MaxThreads:
// each append evicts the oldest history, as on a bus with more live
// threads than the buffer keeps. KeepEnded is set as the pump sets it, and
// the hops' histories are none it keeps, so none is noted.
func BenchmarkContextEvict(b *testing.B) {
	buf, err := NewContextBuffer(ContextConfig{MaxThreads: 1000})
	if err != nil {
		b.Fatal(err)
	}
	buf.KeepEnded(func(first Slot) bool { return first.OwnName != "" })
	ids := make([]string, 4096)
	for i := range ids {
		ids[i] = "thread-" + strconv.Itoa(i)
	}
	raw := make([]byte, 600)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		id := ids[i%len(ids)]
		if _, err := buf.AppendShared(Slot{ThreadID: id, From: "greeter", To: "shouter", PayloadType: "Greeting", Raw: raw}); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
