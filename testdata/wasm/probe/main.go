//go:build wasip1

// Command probe reports what its sandbox allows:
// <Probe><Env/><Write/></Probe> in — the value of the environment variable
// named Env, and whether writing Write (a path) works —
// <Probed><Value/><Wrote/></Probed> out.
package main

import (
	"encoding/xml"
	"fmt"
	"io"
	"os"
)

type probe struct {
	Env   string
	Write string
}

type probed struct {
	XMLName xml.Name `xml:"Probed"`
	Value   string
	Wrote   string
}

func run() int32 {
	in, _ := io.ReadAll(os.Stdin)
	var p probe
	if err := xml.Unmarshal(in, &p); err != nil {
		fmt.Fprintln(os.Stderr, "bad payload:", err)
		return 1
	}
	out := probed{Value: os.Getenv(p.Env), Wrote: "skipped"}
	if p.Write != "" {
		if err := os.WriteFile(p.Write, []byte("written by the guest"), 0o644); err != nil {
			out.Wrote = "error: " + err.Error()
		} else {
			out.Wrote = "ok"
		}
	}
	b, _ := xml.Marshal(out)
	os.Stdout.Write(b)
	return 0
}

//go:wasmexport handle
func handle() int32 { return run() }

func main() { os.Exit(int(run())) }
