// Package wasm holds the sources of the WebAssembly guests the tests build
// with GOOS=wasip1 GOARCH=wasm: calc (a calculator), loop (never returns),
// echo (answers its input, for the per-call benchmark) and ops (performs the
// operation its payload names and reports how it went: read, write, link,
// rename, stat… a path in /data, read an environment variable, allocate
// memory, spin — so one guest, compiled once, probes the whole sandbox).
// Each reads one XML payload on stdin and writes one XML payload on stdout.
// Built normally it is a WASI command (main); built with -buildmode=c-shared
// it is a reactor exporting handle, which the host pools: one instance
// serves many calls. A non-zero result from handle (or exit status from
// main) is an error whose text is what went to stderr.
package wasm
