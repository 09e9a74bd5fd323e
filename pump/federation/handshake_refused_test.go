package federation

import (
	"crypto/ed25519"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/oob/keys"
	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// refusalSignal is an Observer that reports each refusal on a channel
// (dropping those nobody waits for: a refused dial is retried).
type refusalSignal chan string

func (r refusalSignal) Envelope(string, string, Kind) {}
func (r refusalSignal) Refused(gw, reason string) {
	select {
	case r <- gw + "/" + reason:
	default:
	}
}
func (r refusalSignal) RoundTrip(string, time.Duration) {}

// TestDialRefusedHandshakeCountedAndExplained: a link this side dials and
// the handshake refuses — this side does not trust the key the peer
// presents (the peer's identity was rotated), or the peer does not trust
// this side's — is counted as a handshake refusal of the gateway, so
// /metrics tells it from a peer that is down, and the log names both keys
// as `xmlpipe keys show` prints them and what the operator changes.
func TestDialRefusedHandshakeCountedAndExplained(t *testing.T) {
	for _, tc := range []struct {
		name string
		// setup returns the dialer's key, its gateway edit and what the
		// dialer's log must say.
		setup func(t *testing.T, c *callee, trustedByCallee ed25519.PrivateKey) (ed25519.PrivateKey, func(*config.Gateway), []string)
	}{
		{"the dialer does not trust the peer", func(t *testing.T, c *callee, aKey ed25519.PrivateKey) (ed25519.PrivateKey, func(*config.Gateway), []string) {
			stale := newKey(t) // the peer's identity before its rotation
			path := writePublic(t, stale)
			return aKey, func(gc *config.Gateway) { gc.TrustedIdentity = path }, []string{
				"peer identity not trusted",
				"presented key " + keys.Fingerprint(c.key.Public().(ed25519.PublicKey)),
				"not its trusted_identity " + keys.Fingerprint(stale.Public().(ed25519.PublicKey)),
				"new `xmlpipe keys export` file at " + path,
				"restart this organism",
			}
		}},
		{"the peer does not trust the dialer", func(t *testing.T, _ *callee, _ ed25519.PrivateKey) (ed25519.PrivateKey, func(*config.Gateway), []string) {
			rotated := newKey(t) // the dialer's new identity, unknown to the peer
			return rotated, func(*config.Gateway) {}, []string{
				"refused by the peer: identity not trusted",
				"this organism's key is " + keys.Fingerprint(rotated.Public().(ed25519.PublicKey)),
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			aKey := newKey(t)
			c := newCallee(t, aKey)
			key, edit, want := tc.setup(t, c, aKey)
			seen := make(refusalSignal, 16)
			a := newCallerBefore(t, key, c, t.TempDir(), edit, func(m *Manager) { m.opts.Observer = seen })
			defer a.m.Close()
			select {
			case got := <-seen:
				if d := cmp.Diff("b/"+RefusedHandshake, got); d != "" {
					t.Errorf("the dialer's refusal (-want +got):\n%s", d)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the dialer never counted the refused handshake")
			}
			var line string
			waitUntil(t, "the dialer never logged why its link was refused", func() bool {
				for l := range strings.Lines(c.logs.String()) {
					if strings.Contains(l, "side=caller") && strings.Contains(l, "cannot reach the peer") {
						line = l
						return true
					}
				}
				return false
			})
			for _, w := range want {
				if !strings.Contains(line, w) {
					t.Errorf("the dialer's log %q lacks %q", line, w)
				}
			}
		})
	}
}

// TestAcceptedRefusalNamesTheGateway: the accepting side counts a refused
// inbound handshake under the gateway the dialer names when one of that
// name is configured (its peer's identity rotated, say), so /metrics shows
// which link is refused; a name no gateway has is counted as "unknown",
// never as the string the unauthenticated dialer claimed.
func TestAcceptedRefusalNamesTheGateway(t *testing.T) {
	for _, tc := range []struct{ organism, want string }{
		{"a", "a/" + RefusedHandshake},
		{"A", "a/" + RefusedHandshake},
		{"mallory-0123456789", UnknownGateway + "/" + RefusedHandshake},
		{"", UnknownGateway + "/" + RefusedHandshake},
	} {
		t.Run(tc.organism, func(t *testing.T) {
			seen := make(refusalSignal, 16)
			c := newCalleeEdited(t, newKey(t), newKey(t), "", nil, nil, func(o *Options) { o.Observer = seen })
			rotated := newKey(t) // not the key gateway "a" trusts
			if _, err := dialRawAs(t, c, rotated, tc.organism); err == nil {
				t.Fatal("an untrusted key's handshake was accepted")
			}
			select {
			case got := <-seen:
				if d := cmp.Diff(tc.want, got); d != "" {
					t.Errorf("the acceptor's refusal (-want +got):\n%s", d)
				}
			case <-time.After(60 * time.Second):
				t.Fatal("the acceptor never counted the refused handshake")
			}
		})
	}
}

// TestRotatedAcceptorTold: an organism whose identity was rotated and
// which accepts its peer's links (the peer still trusts its old key)
// counts each refused link under the gateway of the dialer's key — which
// it trusts — not as "unknown", and its log names its own key, the one
// the peer's trusted_identity must hold: its operator reads which peer
// has not updated yet and what to hand its operator. The gateway is not
// named like the peer's organism (as in the README's example).
func TestRotatedAcceptorTold(t *testing.T) {
	aKey := newKey(t)
	seen := make(refusalSignal, 16)
	c := newCalleeEdited(t, aKey, newKey(t), "", nil, nil, func(o *Options) {
		o.Observer = seen
		o.Gateways[0].Name = "peer-a"
	})
	a := newCallerWith(t, aKey, c, t.TempDir(), func(gc *config.Gateway) {
		gc.TrustedIdentity = writePublic(t, newKey(t)) // c's key before the rotation
	})
	defer a.m.Close()
	select {
	case got := <-seen:
		if d := cmp.Diff("peer-a/"+RefusedHandshake, got); d != "" {
			t.Errorf("the rotated acceptor's refusal (-want +got):\n%s", d)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the rotated acceptor never counted the refused link")
	}
	own := Fingerprint(c.key.Public().(ed25519.PublicKey))
	waitUntil(t, "the rotated acceptor's log never named the gateway and its own key", func() bool {
		for line := range strings.Lines(c.logs.String()) {
			if strings.Contains(line, "inbound link refused") && strings.Contains(line, "gateway=peer-a") &&
				strings.Contains(line, own) {
				return true
			}
		}
		return false
	})
}

// TestRotatedDialerToldWhichGateway: an organism whose peer rotated its
// identity and dials it (the peer's gateway is not named like the peer's
// organism, as in the README's example) logs, for each refused link, which
// gateway it may belong to — one without a live link — with the key that
// gateway trusts and the trusted_identity file to replace, and that a
// reload applies it: what the README promises the operator is told.
func TestRotatedDialerToldWhichGateway(t *testing.T) {
	aKey := newKey(t)
	var file string
	c := newCalleeEdited(t, aKey, newKey(t), "", nil, nil, func(o *Options) {
		o.Gateways[0].Name = "peer-a"
		file = o.Gateways[0].TrustedIdentity
	})
	rotated := newKey(t)
	if _, err := dialRawAs(t, c, rotated, "organism-a"); err == nil {
		t.Fatal("a rotated key's handshake was accepted")
	}
	old := Fingerprint(aKey.Public().(ed25519.PublicKey))
	waitUntil(t, "the acceptor never named the gateway, its key and its file", func() bool {
		for line := range strings.Lines(c.logs.String()) {
			if strings.Contains(line, "inbound link refused") && strings.Contains(line, "gateway peer-a") &&
				strings.Contains(line, old) && strings.Contains(line, file) && strings.Contains(line, "reload") {
				return true
			}
		}
		return false
	})
}
