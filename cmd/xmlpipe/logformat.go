package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
)

// errLogFormat is wrapped by newLogger for an unknown --log-format.
var errLogFormat = errors.New("want text or json")

// errLogLevel is wrapped by parseLogLevel for an unknown --log-level.
var errLogLevel = errors.New("want debug, info, warn or error")

// parseLogLevel reads a --log-level value: debug, info, warn or error, in
// any case (slog's spellings, "warn+2" too).
func parseLogLevel(name string) (slog.Level, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(name)); err != nil {
		return 0, fmt.Errorf("--log-level %q: %w", name, errLogLevel)
	}
	return level, nil
}

// logFormatFlag registers --log-format on fs.
func logFormatFlag(fs *flag.FlagSet) *string {
	return fs.String("log-format", "text", "log record format: text (key=value) or json (one object per line)")
}

// newLogger is a logger writing records of at least level to w in format:
// "text" (slog's key=value lines) or "json" (one JSON object per line).
func newLogger(w io.Writer, format string, level slog.Leveler) (*slog.Logger, error) {
	opts := &slog.HandlerOptions{Level: level}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: %w", format, errLogFormat)
}
