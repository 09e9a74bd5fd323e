package wasm

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// contractKeys lists the keys of each mapping a contract holds, by the Go
// type name the YAML decoder's errors give.
var contractKeys = map[string]string{}

func init() {
	for _, v := range []any{Contract{}, Fields{}, Field{}} {
		t := reflect.TypeOf(v)
		var keys []string
		for i := range t.NumField() {
			if k, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); k != "" && k != "-" {
				keys = append(keys, k)
			}
		}
		contractKeys[t.String()] = strings.Join(keys, ", ")
	}
}

var (
	unknownKey = regexp.MustCompile(`^(line \d+): field (.+) not found in type (\S+)$`)
	wrongKind  = regexp.MustCompile("^(line \\d+): cannot unmarshal (\\S+)(?: `(.*)`)? into (\\S+)$")
)

// yamlKinds words the YAML tags a decoder's error names.
var yamlKinds = map[string]string{"str": "string", "seq": "list", "map": "mapping", "int": "number",
	"float": "number", "bool": "boolean", "null": "null"}

// contractYAMLError rewrites the YAML decoder's type errors of a contract
// for the guest's author, who never sees its Go types: an unknown key with
// the keys there are, a value where a mapping belongs with what the
// mapping holds. Other errors are returned as they are.
func contractYAMLError(err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return err
	}
	msgs := make([]string, len(te.Errors))
	for i, m := range te.Errors {
		msgs[i] = m
		if g := unknownKey.FindStringSubmatch(m); g != nil {
			if keys, ok := contractKeys[g[3]]; ok {
				msgs[i] = fmt.Sprintf("%s: unknown key %q (the keys here: %s)", g[1], g[2], keys)
			}
		} else if g := wrongKind.FindStringSubmatch(m); g != nil {
			got := strings.TrimPrefix(g[2], "!!")
			if w, ok := yamlKinds[got]; ok {
				got = w
			}
			if g[3] != "" {
				got += fmt.Sprintf(" %q", g[3])
			}
			switch keys, ok := contractKeys[g[4]]; {
			case g[4] == reflect.TypeOf(Contract{}).String():
				msgs[i] = fmt.Sprintf("%s: got a %s, want a mapping of payload: (and response:) field lists", g[1], got)
			case ok:
				msgs[i] = fmt.Sprintf("%s: got a %s, want a mapping of %s", g[1], got, keys)
			}
		}
	}
	return errors.New(strings.Join(msgs, "; "))
}
