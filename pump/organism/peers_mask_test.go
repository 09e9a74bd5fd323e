package organism

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPeersMaskKeepsTheOwnProfile: what a listener may address is its
// peers and tools (an agent's) within its own profile:, which narrows
// every message it sends — a tool listed among its tools that its profile
// does not reach is masked out, as the pump would refuse it; a listener
// that is no agent is masked by its profile alone.
func TestPeersMaskKeepsTheOwnProfile(t *testing.T) {
	doc := strings.Replace(helloWithTools, "    agent: true\n", "    agent: true\n    profile: calc-only\n", 1)
	doc = strings.Replace(doc, "    handler: handlers.hello.handle_shout\n",
		"    handler: handlers.hello.handle_shout\n    profile: web\n", 1)
	o := loadOrganism(t, doc+"profiles:\n  calc-only: {listeners: [greeter, shouter, calculate, fetch]}\n"+
		"  web: {listeners: [fetch, \"x*\"]}\n")
	names := []string{"greeter", "shouter", "calculate", "files", "fetch", "xml_extract", "response-handler"}
	for _, tc := range []struct {
		listener string
		want     []string
	}{
		{"greeter", []string{"shouter", "calculate", "fetch"}},
		{"shouter", []string{"fetch", "xml_extract"}},
	} {
		t.Run(tc.listener, func(t *testing.T) {
			m, err := o.PeersMask(tc.listener)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, n := range names {
				if m.Allows(n) {
					got = append(got, n)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s may address (-want +got):\n%s", tc.listener, diff)
			}
		})
	}
}
