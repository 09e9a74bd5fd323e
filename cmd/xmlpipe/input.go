package main

import (
	"fmt"
	"io"
	"os"
)

// readInput reads the file named by arg, or standard input for "-".
func readInput(arg string, stdin io.Reader) ([]byte, error) {
	if arg == "-" {
		b, err := io.ReadAll(stdin)
		if err != nil {
			return nil, fmt.Errorf("read standard input: %w", err)
		}
		return b, nil
	}
	return os.ReadFile(arg)
}
