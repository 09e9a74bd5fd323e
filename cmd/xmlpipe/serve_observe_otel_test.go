package main

import (
	"bytes"
	"encoding/json"
	"errors"
	stdlog "log"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/otel"

	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// TestTraceExportErrorsGoToTheLog: with traces on, an export the collector
// refuses (or cannot take: none listening) is logged through the
// organism's logger — one JSON object under --log-format json — instead of
// OpenTelemetry's default, the standard logger's plain line on stderr
// ("2026/11/28 22:41:50 traces export: Post …: connection refused").
func TestTraceExportErrorsGoToTheLog(t *testing.T) {
	// OpenTelemetry's default: the standard logger (its handler cannot
	// be read back and set again: that is a delegate of itself).
	t.Cleanup(func() { otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { stdlog.Print(err) })) })
	dir := t.TempDir()
	path := filepath.Join(dir, "organism.yaml")
	doc := append(append([]byte(nil), defaultOrganism...),
		"\nobservability:\n  traces: {enabled: true, otlp_endpoint: 127.0.0.1:1, otlp_insecure: true}\n"...)
	if err := os.WriteFile(path, doc, 0o644); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	var obs observers
	refused := errors.New("build refused by the test")
	_, err := observedBuild(configSource{path: path}, func(organism.Options) (*organism.Organism, error) {
		return nil, refused
	}, &obs)(organism.Options{Logger: log})
	if !errors.Is(err, refused) {
		t.Fatalf("observedBuild = %v, want the build's error", err)
	}
	otel.Handle(errors.New(`traces export: Post "http://127.0.0.1:1/v1/traces": connection refused`))
	line, _, _ := strings.Cut(logs.String(), "\n")
	var rec map[string]any
	if err := json.Unmarshal([]byte(line), &rec); err != nil {
		t.Fatalf("the export error is not in the organism's log: %q", logs.String())
	}
	if rec["level"] != "WARN" || !strings.Contains(rec["error"].(string), "connection refused") {
		t.Errorf("logged %s, want a warning with the error", line)
	}
}
