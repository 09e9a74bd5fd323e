//go:build wasip1

// Command readfile reads the file its payload names:
// <ReadFile><Path/></ReadFile> in, <FileContent><Text/></FileContent> out.
package main

import (
	"encoding/xml"
	"fmt"
	"io"
	"os"
)

type readFile struct{ Path string }

type fileContent struct {
	XMLName xml.Name `xml:"FileContent"`
	Text    string
}

func run() int32 {
	in, _ := io.ReadAll(os.Stdin)
	var r readFile
	if err := xml.Unmarshal(in, &r); err != nil {
		fmt.Fprintln(os.Stderr, "bad payload:", err)
		return 1
	}
	b, err := os.ReadFile(r.Path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	out, _ := xml.Marshal(fileContent{Text: string(b)})
	os.Stdout.Write(out)
	return 0
}

//go:wasmexport handle
func handle() int32 { return run() }

func main() { os.Exit(int(run())) }
