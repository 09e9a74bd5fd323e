package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

func TestNewLogger(t *testing.T) {
	for _, c := range []struct {
		format string
		check  func(t *testing.T, out string)
	}{
		{"json", func(t *testing.T, out string) {
			var rec map[string]any
			if err := json.Unmarshal([]byte(out), &rec); err != nil {
				t.Fatalf("not one JSON object: %q: %v", out, err)
			}
			if rec["msg"] != "handled" || rec["thread"] != "t-1" || rec["listener"] != "greeter" || rec["level"] != "INFO" {
				t.Errorf("record %v", rec)
			}
		}},
		{"text", func(t *testing.T, out string) {
			for _, want := range []string{"level=INFO", "msg=handled", "thread=t-1", "listener=greeter"} {
				if !strings.Contains(out, want) {
					t.Errorf("%q lacks %s", out, want)
				}
			}
		}},
	} {
		t.Run(c.format, func(t *testing.T) {
			var buf bytes.Buffer
			log, err := newLogger(&buf, c.format, slog.LevelInfo)
			if err != nil {
				t.Fatal(err)
			}
			log.Debug("below the level")
			log.Info("handled", "thread", "t-1", "listener", "greeter")
			c.check(t, strings.TrimSpace(buf.String()))
		})
	}
	if _, err := newLogger(&bytes.Buffer{}, "xml", slog.LevelInfo); !errors.Is(err, errLogFormat) {
		t.Errorf("format xml: %v, want errLogFormat", err)
	}
}
