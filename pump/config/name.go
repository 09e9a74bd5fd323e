package config

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
)

// ErrListenerName reports a listener name that cannot be written where
// listeners are named — a console's @name, a peers list, an agent's tool
// call — because it holds a space or a control character.
var ErrListenerName = errors.New("must not contain spaces or control characters")

// CheckListenerName reports (wrapping ErrListenerName) a listener name that
// holds a space or a control character: the rule organism.yaml's names
// follow, which a listener given in Go follows too.
func CheckListenerName(name string) error {
	if strings.IndexFunc(name, func(c rune) bool { return unicode.IsSpace(c) || unicode.IsControl(c) }) >= 0 {
		return fmt.Errorf("%q %w", name, ErrListenerName)
	}
	return nil
}
