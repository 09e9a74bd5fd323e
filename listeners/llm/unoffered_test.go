package llm

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// TestUnofferedPeersWarningSaysWhy: a peer handed to the agent without a
// payload contract — no listener of that name, or one the conversation's
// profile does not reach (a callable's requires:, a security profile) —
// is not offered, and the warning names both causes, so a developer whose
// callable agent lost its tools knows where to look.
func TestUnofferedPeersWarningSaysWhy(t *testing.T) {
	r := newLoopRig(t, Reply{Content: "fine"})
	var logs bytes.Buffer
	r.a.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	r.peers = append(r.peers, xmlpipe.Peer{Name: "calculate"})
	r.deliver("console", "hi", "")
	for _, want := range []string{"calculate", "no listener of that name is registered", "profile", "requires:"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the warning lacks %q:\n%s", want, logs.String())
		}
	}
}
