// Package registry holds the kernel state of an organism in memory: the thread
// registry (opaque UUID ↔ call-chain path), the todo registry (watchers that
// raise an agent's eyebrow when an awaited payload arrives) and the context
// buffer (per-thread, append-only message history).
//
// Everything here is safe for concurrent use and depends on no other package
// of the module. Durability is optional: each registry accepts a sink that is
// told about every change (package registry/store implements the rows), and
// each can Restore itself from persisted records after a restart.
//
// Typical wiring:
//
//	threads := registry.NewThreads(registry.ThreadsConfig{Organism: "hello-world"})
//	todos := registry.NewTodoRegistry(registry.TodoConfig{Lineage: threads})
//	history, err := registry.NewContextBuffer(registry.ContextConfig{})
//	threads.OnEnd(todos.ThreadsEnded)   // a thread that ends closes its watchers
//	threads.OnEnd(history.ThreadsEnded) // … and frees its history
package registry
