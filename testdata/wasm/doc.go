// Package wasm holds the sources of the WebAssembly guests the tests build
// with GOOS=wasip1 GOARCH=wasm: calc (a calculator), loop (never returns),
// readfile (reads a file named in its payload), memhog (allocates the
// megabytes it is asked for), echo (answers its input, for the per-call
// benchmark), probe (reports an environment variable and whether a write
// works) and ops (performs one filesystem operation — read, write, symlink,
// rename, stat… — or spins, as its payload says). Each reads one XML
// payload on stdin and writes one XML payload on stdout. Built normally it is a WASI command (main);
// built with -buildmode=c-shared it is a reactor exporting handle, which the
// host pools: one instance serves many calls. A non-zero result from handle
// (or exit status from main) is an error whose text is what went to stderr.
package wasm
