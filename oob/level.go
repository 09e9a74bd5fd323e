package oob

import (
	"fmt"
	"log/slog"
)

// slogLevel parses a log level name.
type slogLevel struct{ l slog.Level }

func (s *slogLevel) parse(v string) error {
	if err := s.l.UnmarshalText([]byte(v)); err != nil {
		return fmt.Errorf("log_level: %q is not debug, info, warn or error", v)
	}
	return nil
}
