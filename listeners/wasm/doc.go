// Package wasm runs listeners written as WebAssembly modules in a wazero
// sandbox. A module gets one XML payload on WASI stdin and writes one XML
// payload on stdout; it has no network, no filesystem unless a directory is
// preopened as /data (a writable one capped at Sandbox.MaxDiskBytes), only
// the environment variables allowed, a memory cap — its tables held to it
// too, functions to at most 50000 locals and vectors to their section's
// length (see boundModule) — and a
// deadline per call after which it is interrupted.
//
// Two module shapes are accepted:
//   - a reactor (Go: go build -buildmode=c-shared with //go:wasmexport handle)
//     exporting _initialize and handle() i32: instances are pooled, so a call
//     costs an exported-function call; handle returns 0 on success, else the
//     call fails with what the guest wrote to stderr;
//   - a WASI command (_start): a fresh instance per call; exit status 0 is
//     success.
//
// A reactor may export describe() i32, which writes its contract (the
// payload and response field lists, in organism.yaml's YAML form) to stdout.
//
// A trap, a timeout, an exit, an output over the cap or output that is not
// the declared response is an error from the handler, which the pump turns
// into a <huh> to the sender; the instance involved is discarded and the
// organism stays up.
package wasm
