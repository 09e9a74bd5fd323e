package store

import (
	"fmt"
	"math"
)

// argKind tells which field of a sqlArg holds its value.
type argKind uint8

const (
	argNull argKind = iota
	argInt
	argFloat
	argText
	argBlob
)

// sqlArg is one statement argument held by value rather than in an
// interface. The journal writer binds 13 values per row; boxing them in a
// []any took ~11 allocations per journaled envelope (every int64 above 255,
// every string and slice header).
type sqlArg struct {
	kind argKind
	i    int64  // argInt; argFloat as math.Float64bits
	s    string // argText
	b    []byte // argBlob; argText when s is empty
}

// intArg is an INTEGER argument.
func intArg(v int64) sqlArg { return sqlArg{kind: argInt, i: v} }

// textArg is a TEXT argument.
func textArg(s string) sqlArg { return sqlArg{kind: argText, s: s} }

// textBytesArg is a TEXT argument held in b, bound without converting it
// to a string (which would copy it).
func textBytesArg(b []byte) sqlArg { return sqlArg{kind: argText, b: b} }

// blobArg is a BLOB argument; a nil slice is NULL, an empty one an empty
// blob.
func blobArg(b []byte) sqlArg {
	if b == nil {
		return sqlArg{}
	}
	return sqlArg{kind: argBlob, b: b}
}

// toArg converts an argument of the database/sql kinds (after normalize)
// to a sqlArg.
func toArg(v any) (sqlArg, error) {
	v, err := normalize(v)
	if err != nil {
		return sqlArg{}, err
	}
	switch v := v.(type) {
	case nil:
		return sqlArg{}, nil
	case int64:
		return intArg(v), nil
	case float64:
		return sqlArg{kind: argFloat, i: int64(math.Float64bits(v))}, nil
	case bool:
		if v {
			return intArg(1), nil
		}
		return intArg(0), nil
	case string:
		return textArg(v), nil
	case []byte:
		return blobArg(v), nil
	}
	return sqlArg{}, fmt.Errorf("unsupported type %T", v)
}
