package registry

import (
	"runtime"
	"testing"

	"github.com/google/uuid"
)

// BenchmarkThreadsConversation measures one request/response round trip:
// Begin, two Extends, then three Prunes back up the chain to the external
// caller (6 registry operations, including id generation).
func BenchmarkThreadsConversation(b *testing.B) {
	th := NewThreads(ThreadsConfig{Organism: "hello-world"})
	b.ReportAllocs()
	for b.Loop() {
		conversation(b, th)
	}
}

// BenchmarkThreadsConversationParallel is BenchmarkThreadsConversation on
// every core at once, sharing one registry.
func BenchmarkThreadsConversationParallel(b *testing.B) {
	th := NewThreads(ThreadsConfig{Organism: "hello-world"})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			conversation(b, th)
		}
	})
}

// BenchmarkThreadsConversationSubscribed is the parallel round trip with an
// OnEnd subscriber, as in a pump (the todo registry and the context buffer
// subscribe): every Prune then has an event to deliver.
func BenchmarkThreadsConversationSubscribed(b *testing.B) {
	th := NewThreads(ThreadsConfig{Organism: "hello-world"})
	th.OnEnd(func([]string) {})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			conversation(b, th)
		}
	})
}

// BenchmarkThreadsExtendMemoised measures Extend when the hop's child is live.
func BenchmarkThreadsExtendMemoised(b *testing.B) {
	th := NewThreads(ThreadsConfig{Organism: "hello-world"})
	root := uuid.NewString()
	if err := th.Begin(root, "console", "greeter"); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := th.Extend(root, "shouter"); err != nil {
			b.Fatal(err)
		}
	}
}

func conversation(b *testing.B, th *Threads) {
	root := uuid.NewString()
	if err := th.Begin(root, "console", "greeter"); err != nil {
		b.Fatal(err)
	}
	shouter, err := th.Extend(root, "shouter")
	if err != nil {
		b.Fatal(err)
	}
	handler, err := th.Extend(shouter, "response-handler")
	if err != nil {
		b.Fatal(err)
	}
	for _, id := range []string{handler, shouter, root} {
		if _, _, err := th.Prune(id); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGCWithIdleThreads measures a full garbage collection while the
// registry holds 200 000 idle conversations (a root and one child each, as
// a finished request leaves them until their TTL): the collector's cost of
// the registry itself, which a pump pays on every GC cycle.
func BenchmarkGCWithIdleThreads(b *testing.B) {
	const conversations = 200_000
	th := NewThreads(ThreadsConfig{Organism: "hello-world"})
	for i := range conversations {
		root := uuid.NewString()
		if err := th.Begin(root, "client", "greeter"); err != nil {
			b.Fatal(err)
		}
		if i%2 == 0 {
			if _, err := th.Extend(root, "shouter"); err != nil {
				b.Fatal(err)
			}
		}
	}
	runtime.GC()
	b.ResetTimer()
	for b.Loop() {
		runtime.GC()
	}
	b.StopTimer()
	runtime.KeepAlive(th)
}
