//go:build wasip1

// Command memhog allocates (and touches) the megabytes its payload asks for,
// in one allocation, so that a request over the memory cap fails at once
// (the linear memory cannot grow) however slowly the guest runs:
// <Hog><MB/></Hog> in, <Hogged><MB/></Hogged> out.
package main

import (
	"encoding/xml"
	"fmt"
	"io"
	"os"
)

type hog struct{ MB int }

var keep []byte

func run() int32 {
	in, _ := io.ReadAll(os.Stdin)
	var h hog
	if err := xml.Unmarshal(in, &h); err != nil {
		fmt.Fprintln(os.Stderr, "bad payload:", err)
		return 1
	}
	keep = make([]byte, h.MB<<20)
	for i := 0; i < len(keep); i += 4096 { // a byte per page: the pages are used
		keep[i] = byte(i)
	}
	keep = nil
	fmt.Fprintf(os.Stdout, "<Hogged><MB>%d</MB></Hogged>", h.MB)
	return 0
}

//go:wasmexport handle
func handle() int32 { return run() }

func main() { os.Exit(int(run())) }
