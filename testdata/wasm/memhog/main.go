//go:build wasip1

// Command memhog allocates (and touches) the megabytes its payload asks for:
// <Hog><MB/></Hog> in, <Hogged><MB/></Hogged> out.
package main

import (
	"encoding/xml"
	"fmt"
	"io"
	"os"
)

type hog struct{ MB int }

var keep [][]byte

func run() int32 {
	in, _ := io.ReadAll(os.Stdin)
	var h hog
	if err := xml.Unmarshal(in, &h); err != nil {
		fmt.Fprintln(os.Stderr, "bad payload:", err)
		return 1
	}
	for i := 0; i < h.MB; i++ {
		b := make([]byte, 1<<20)
		for j := range b {
			b[j] = byte(j)
		}
		keep = append(keep, b)
	}
	keep = nil
	fmt.Fprintf(os.Stdout, "<Hogged><MB>%d</MB></Hogged>", h.MB)
	return 0
}

//go:wasmexport handle
func handle() int32 { return run() }

func main() { os.Exit(int(run())) }
