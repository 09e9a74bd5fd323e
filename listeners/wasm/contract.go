package wasm

import (
	"bytes"
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/fields"
)

// Fields is a payload contract written as data: a root element with
// simple-typed children (organism.yaml's payload: and response:, or what a
// module's describe export writes). The type lives in xmlpipe/fields, which
// the federation's imported capabilities use too.
type Fields = fields.List

// Field is one child element.
type Field = fields.Field

// Contract is what a module takes and answers.
type Contract struct {
	// Payload is the input contract.
	Payload Fields `yaml:"payload"`
	// Response is the output contract (empty: output routed by root tag).
	Response Fields `yaml:"response"`
}

// ParseContract reads a contract in YAML (what a describe export writes).
func ParseContract(b []byte) (Contract, error) {
	var c Contract
	if len(bytes.TrimSpace(b)) == 0 {
		return Contract{}, fmt.Errorf("%w: describe wrote nothing: it must write its payload: (and response:) "+
			"field lists, in YAML, to stdout", ErrContract)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		return Contract{}, fmt.Errorf("%w: %w", ErrContract, contractYAMLError(err))
	}
	if c.Payload.IsZero() {
		return Contract{}, fmt.Errorf("%w: no payload", ErrContract)
	}
	return c, nil
}

// FieldsFromXSD reads the field list of an XSD file whose one top-level
// element is a sequence (or all) of simple-typed children (fields.FromXSD).
func FieldsFromXSD(schema []byte) (Fields, error) { return fields.FromXSD(schema) }
