package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// What `xmlpipe version` reports when the build says it: make build sets
// them with -ldflags "-X main.version=… -X main.commit=… -X
// main.commitTime=… -X main.modified=true" (its GOFLAGS turn off the go
// command's own VCS stamping). Unset, the binary's build information is used.
var (
	// version is the release (a git tag); "" takes the module version.
	version string
	// commit is the VCS revision, commitTime its time (RFC 3339, UTC), and
	// modified "true" when the working tree had uncommitted changes.
	commit, commitTime, modified string
)

// buildInfo is what `xmlpipe version` prints.
type buildInfo struct {
	// Version is the module version: a release tag, or "(devel)" for a
	// build from a checkout.
	Version string
	// Commit, Time and Modified describe the VCS revision built ("" when
	// unknown).
	Commit, Time string
	Modified     bool
	// Go is the toolchain and platform; LibXML2 the libxml2 the stages run on.
	Go, LibXML2 string
}

// currentBuild reads the binary's build information, overridden by what
// -ldflags injected.
func currentBuild() buildInfo {
	b := buildInfo{Version: "(devel)", Go: runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH,
		LibXML2: stage.LibXML2Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			b.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				b.Commit = s.Value
			case "vcs.time":
				b.Time = s.Value
			case "vcs.modified":
				b.Modified = s.Value == "true"
			}
		}
	}
	if version != "" {
		b.Version = version
	}
	if commit != "" {
		b.Commit, b.Time, b.Modified = commit, commitTime, modified == "true"
	}
	return b
}

// String renders the build information, one fact a line.
func (b buildInfo) String() string {
	var s strings.Builder
	fmt.Fprintf(&s, "xmlpipe %s\n", b.Version)
	rev := "unknown (built without VCS information: make build records it)"
	if b.Commit != "" {
		rev = b.Commit
		if b.Time != "" {
			rev += " " + b.Time
		}
		if b.Modified {
			rev += " (modified)"
		}
	}
	fmt.Fprintf(&s, "commit   %s\n", rev)
	fmt.Fprintf(&s, "go       %s\n", b.Go)
	fmt.Fprintf(&s, "libxml2  %s\n", b.LibXML2)
	return s.String()
}

// runVersion is `xmlpipe version`.
func runVersion(_ context.Context, args []string, std streams) int {
	fs := newFlags("version", "", std.err)
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if !wantArgs(fs, pos, 0, 0) {
		return exitUsage
	}
	fmt.Fprint(std.out, currentBuild())
	return exitOK
}
