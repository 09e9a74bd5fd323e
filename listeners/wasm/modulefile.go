package wasm

import "github.com/xml-pipeline/xmlpipe/xmlpipe/regfile"

// ReadModule reads the module file at path. The file is opened without
// blocking and must be a regular file (else ErrNotRegular): a FIFO would
// block the read until a writer came, for good if none does.
func ReadModule(path string) ([]byte, error) {
	return regfile.Read(path)
}
