//go:build wasip1

// Command calc is a calculator guest: <Calc><A/><B/><Op/></Calc> in,
// <CalcResult><Value/></CalcResult> out.
package main

import (
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"strconv"
)

type calc struct {
	A, B float64
	Op   string
}

func run() int32 {
	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "read:", err)
		return 1
	}
	var c calc
	if err := xml.Unmarshal(in, &c); err != nil {
		fmt.Fprintln(os.Stderr, "bad payload:", err)
		return 1
	}
	var v float64
	switch c.Op {
	case "add", "":
		v = c.A + c.B
	case "sub":
		v = c.A - c.B
	case "mul":
		v = c.A * c.B
	case "div":
		if c.B == 0 {
			fmt.Fprintln(os.Stderr, "division by zero")
			return 1
		}
		v = c.A / c.B
	default:
		fmt.Fprintf(os.Stderr, "unknown op %q\n", c.Op)
		return 1
	}
	os.Stdout.WriteString("<CalcResult><Value>" + strconv.FormatFloat(v, 'g', -1, 64) + "</Value></CalcResult>")
	return 0
}

//go:wasmexport handle
func handle() int32 { return run() }

// describe writes the guest's contract (the field lists of organism.yaml).
//
//go:wasmexport describe
func describe() int32 {
	os.Stdout.WriteString(`payload:
  root: Calc
  fields:
    - {name: A, type: double, doc: first operand}
    - {name: B, type: double, doc: second operand}
    - {name: Op, type: string, enum: [add, sub, mul, div], doc: the operation}
response:
  root: CalcResult
  fields:
    - {name: Value, type: double, doc: the result}
`)
	return 0
}

func main() { os.Exit(int(run())) }
