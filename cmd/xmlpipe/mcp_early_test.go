package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMCPHTTPListensBeforeBuild: `xmlpipe mcp --http` opens its port
// before the organism is built, so a client connecting while a slow build
// runs is held rather than refused. An organism whose build fails shows
// the order: the address is announced before the build's error, and the
// command still fails.
func TestMCPHTTPListensBeforeBuild(t *testing.T) {
	dir := helloDir(t)
	path := filepath.Join(dir, "organism.yaml")
	doc := bytes.Replace(defaultOrganism, []byte("handler: handlers.hello.handle_greeting"),
		[]byte("handler: handlers.hello.no_such_handler"), 1)
	if bytes.Equal(doc, defaultOrganism) {
		t.Fatal("the default organism no longer names handlers.hello.handle_greeting")
	}
	if err := os.WriteFile(path, doc, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, "mcp", "--http", "127.0.0.1:0", path)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ee, ok := errors.AsType[*exec.ExitError](err); !ok || ee.ExitCode() != exitFailure {
		t.Fatalf("xmlpipe mcp = %v, want exit %d\nstderr:\n%s", err, exitFailure, stderr.String())
	}
	out := stderr.String()
	listening := strings.Index(out, "xmlpipe mcp: streamable HTTP on http://127.0.0.1:")
	failed := strings.Index(out, "no_such_handler")
	if listening < 0 || failed < 0 || listening > failed {
		t.Errorf("stderr does not announce the address before the build's error:\n%s", out)
	}
}
