package xmlpipe_test

import (
	"os/exec"
	"strings"
	"testing"
)

// maxGoDocLines is one screen: go doc ./xmlpipe is where a listener's
// author starts (README "Writing a listener"), so the package's summary —
// its doc comment and every exported name — must fit on it.
const maxGoDocLines = 60

func TestGoDocFitsOneScreen(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to run go doc with")
	}
	out, err := exec.Command(goCmd, "doc", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go doc .: %v\n%s", err, out)
	}
	if n := strings.Count(string(out), "\n"); n > maxGoDocLines {
		t.Errorf("go doc ./xmlpipe is %d lines, more than one screen (%d): move what a listener's author does not need out of the package, or shorten its doc comment\n%s",
			n, maxGoDocLines, out)
	}
}
