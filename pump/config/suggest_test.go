package config

import (
	"reflect"
	"testing"
)

var typeOfListener = reflect.TypeFor[Listener]()

func TestEditDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"name", "name", 0},
		{"nme", "name", 1},
		{"agnet", "agent", 1}, // a transposition counts once
		{"payload_clas", "payload_class", 1},
		{"kitten", "sitting", 3},
		{"", "abc", 3},
	}
	for _, tt := range tests {
		if got := editDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestHint(t *testing.T) {
	listenerKeys := fieldsOf(typeOfListener).names
	tests := []struct {
		key  string
		want string
	}{
		{"payload_clas", ` (did you mean "payload_class"?)`},
		{"Agent", ` (did you mean "agent"?)`},
		{"descripton", ` (did you mean "description"?)`},
		{"port", ` (did you mean organism.port or oob.port?)`},
		{"max_concurrent_handlers", ` (did you mean top-level "max_concurrent_handlers"?)`},
		{"allowed_paths", ` (did you mean listeners[].tool_config.*.allowed_paths?)`},
		{"timeout_seconds", ``},
		{"x", ``},
	}
	for _, tt := range tests {
		if got := hint(tt.key, listenerKeys); got != tt.want {
			t.Errorf("hint(%q) = %q, want %q", tt.key, got, tt.want)
		}
	}
}
