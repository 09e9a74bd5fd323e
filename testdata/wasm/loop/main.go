//go:build wasip1

// Command loop never answers: it spins until the host interrupts it.
package main

import (
	"io"
	"os"
)

var sink int

func run() int32 {
	_, _ = io.ReadAll(os.Stdin)
	for i := 0; ; i++ {
		sink += i
	}
}

//go:wasmexport handle
func handle() int32 { return run() }

func main() { os.Exit(int(run())) }
