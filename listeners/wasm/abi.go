package wasm

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/tetratelabs/wazero/api"
)

// i32 is the result types of handle and describe.
var i32 = []api.ValueType{api.ValueTypeI32}

// abiType is nil when the exported function def, named name, takes nothing
// and returns results, else an ErrABI saying its type and the one wanted.
func abiType(name string, def api.FunctionDefinition, results []api.ValueType) error {
	if len(def.ParamTypes()) == 0 && slices.Equal(def.ResultTypes(), results) {
		return nil
	}
	return fmt.Errorf("%w: %s is %s, want %s", ErrABI, name, signature(def.ParamTypes(), def.ResultTypes()),
		signature(nil, results))
}

// signature writes a function type as "(i32) -> i64", "() -> ()".
func signature(params, results []api.ValueType) string {
	list := func(ts []api.ValueType) string {
		names := make([]string, len(ts))
		for i, t := range ts {
			names[i] = api.ValueTypeName(t)
		}
		return "(" + strings.Join(names, ", ") + ")"
	}
	r := list(results)
	if len(results) == 1 {
		r = r[1 : len(r)-1]
	}
	return list(params) + " -> " + r
}

// exportList says which functions a module exports: "it exports a, b"
// (sorted, at most ten named) or "it exports no function".
func exportList(ex map[string]api.FunctionDefinition) string {
	if len(ex) == 0 {
		return "it exports no function"
	}
	names := slices.Sorted(maps.Keys(ex))
	if len(names) > 10 {
		names = append(names[:10], fmt.Sprintf("… (%d in all)", len(ex)))
	}
	return "it exports " + strings.Join(names, ", ")
}
