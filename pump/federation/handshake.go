package federation

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gorilla/websocket"

	"github.com/xml-pipeline/xmlpipe/oob/keys"
)

// Handshake errors.
var (
	// ErrUntrusted: the peer's key is not a gateway's trusted identity.
	ErrUntrusted = errors.New("federation: peer identity not trusted")
	// ErrProof: the peer's signature over the handshake does not verify.
	ErrProof = errors.New("federation: peer failed to prove its identity")
	// ErrNameless: the peer's handshake names no organism, so the <from>
	// of its envelopes could not be checked against it.
	ErrNameless = errors.New("federation: the peer's handshake names no organism")
)

// handshakeTimeout bounds the whole handshake (the peer needs two round
// trips and two signatures).
const handshakeTimeout = 5 * time.Second

// handshakeFrameMax caps a frame read during the handshake: its frames are
// a few hundred bytes (two keys, a nonce, a signature, an organism name),
// and until the peer's proof verifies it is unauthenticated, so it cannot
// make this side buffer more. The link's own cap (maxFrame) applies once
// the handshake is done.
const handshakeFrameMax = 16 << 10

// exporterLabel names the TLS exporter value the proofs are bound to.
const exporterLabel = "EXPORTER-xmlpipe-federation-v1"

// binding is the TLS exporter value of a connection (nil without TLS).
func binding(cs *tls.ConnectionState) ([]byte, error) {
	if cs == nil {
		return nil, nil
	}
	b, err := cs.ExportKeyingMaterial(exporterLabel, nil, 32)
	if err != nil {
		return nil, fmt.Errorf("federation: tls exporter: %w", err)
	}
	return b, nil
}

// transcript is what each side signs: its role, both keys, both nonces and
// the TLS binding, length-prefixed.
func transcript(role string, dialer, acceptor ed25519.PublicKey, nd, na, tlsBinding []byte) []byte {
	var b bytes.Buffer
	for _, part := range [][]byte{[]byte("xmlpipe-federation-v1"), []byte(role), dialer, acceptor, nd, na, tlsBinding} {
		b.WriteByte(byte(len(part) >> 8))
		b.WriteByte(byte(len(part)))
		b.Write(part)
	}
	return b.Bytes()
}

// peer is the result of a handshake.
type peer struct {
	key      ed25519.PublicKey
	organism string
	// ahead is how far the peer's clock runs ahead of this side's
	// (negative: behind), as the time its handshake frame told shows;
	// clockKnown says whether it told one.
	ahead      time.Duration
	clockKnown bool
}

// clockOf reads the time a peer's handshake frame told, received at now:
// how far its clock runs ahead of now's, and whether it told one.
func clockOf(f frame, now time.Time) (time.Duration, bool) {
	t, err := time.Parse(time.RFC3339Nano, f.Time)
	if err != nil {
		return 0, false
	}
	return t.Sub(now), true
}

// stamp is the handshake frame's Time of now.
func stamp(now time.Time) string { return now.UTC().Format(time.RFC3339Nano) }

func nonce() []byte {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand never fails on Linux
	return b
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

func unb64(s string, n int, what string) ([]byte, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(b) != n {
		return nil, fmt.Errorf("%w: %s: want %d base64 bytes", ErrProtocol, what, n)
	}
	return b, nil
}

func readFrame(c *websocket.Conn, want string) (frame, error) {
	mt, b, err := c.ReadMessage()
	if err != nil {
		return frame{}, err
	}
	var f frame
	if mt != websocket.TextMessage || json.Unmarshal(b, &f) != nil {
		return frame{}, fmt.Errorf("%w: handshake: want a %s frame", ErrProtocol, want)
	}
	if f.Type == frameError {
		return f, fmt.Errorf("%w: %s", ErrRefused, f.Error)
	}
	if f.Type != want {
		return f, fmt.Errorf("%w: handshake: want %s, got %q", ErrProtocol, want, f.Type)
	}
	return f, nil
}

func writeFrame(c *websocket.Conn, f frame) error {
	return c.WriteMessage(websocket.TextMessage, f.marshal())
}

// dialHandshake runs the dialer's side: hello → challenge → proof → welcome.
// trusted is the gateway's trusted identity.
func dialHandshake(c *websocket.Conn, key ed25519.PrivateKey, organism string, trusted ed25519.PublicKey,
	cs *tls.ConnectionState, now func() time.Time) (peer, error) {
	_ = c.SetReadDeadline(time.Now().Add(handshakeTimeout))
	defer c.SetReadDeadline(time.Time{})
	c.SetReadLimit(handshakeFrameMax)
	tb, err := binding(cs)
	if err != nil {
		return peer{}, err
	}
	pub := key.Public().(ed25519.PublicKey)
	nd := nonce()
	if err := writeFrame(c, frame{Type: frameHello, Key: b64(pub), Nonce: b64(nd), Organism: organism, Time: stamp(now())}); err != nil {
		return peer{}, err
	}
	ch, err := readFrame(c, frameChallenge)
	if err != nil {
		return peer{}, err
	}
	ahead, clockKnown := clockOf(ch, now())
	akey, err := unb64(ch.Key, ed25519.PublicKeySize, "key")
	if err != nil {
		return peer{}, err
	}
	na, err := unb64(ch.Nonce, 32, "nonce")
	if err != nil {
		return peer{}, err
	}
	sig, err := unb64(ch.Sig, ed25519.SignatureSize, "sig")
	if err != nil {
		return peer{}, err
	}
	// The acceptor is told why, as it tells a dialer it refuses: else its
	// operator reads only of a link cut short (an unexpected EOF), not of
	// a key the dialer does not trust (a rotated identity, say).
	if subtle.ConstantTimeCompare(akey, trusted) != 1 {
		_ = writeFrame(c, frame{Type: frameError, Error: "identity not trusted: the dialer's trusted_identity for this organism is another key"})
		return peer{}, fmt.Errorf("%w: the peer presented key %s, not its trusted_identity %s",
			ErrUntrusted, keys.Fingerprint(akey), keys.Fingerprint(trusted))
	}
	if !ed25519.Verify(akey, transcript("acceptor", pub, akey, nd, na, tb), sig) {
		_ = writeFrame(c, frame{Type: frameError, Error: "proof does not verify"})
		return peer{}, ErrProof
	}
	if ch.Organism == "" {
		_ = writeFrame(c, frame{Type: frameError, Error: namelessWhy("challenge")})
		return peer{}, fmt.Errorf("%w: its challenge (key %s) says no organism.name", ErrNameless, keys.Fingerprint(akey))
	}
	proof := ed25519.Sign(key, transcript("dialer", pub, akey, nd, na, tb))
	if err := writeFrame(c, frame{Type: frameProof, Sig: b64(proof)}); err != nil {
		return peer{}, err
	}
	_, err = readFrame(c, frameWelcome)
	if err != nil {
		return peer{}, err
	}
	return peer{key: akey, organism: ch.Organism, ahead: ahead, clockKnown: clockKnown}, nil
}

// acceptHandshake runs the acceptor's side. trust maps a dialer's key to its
// gateway (nil: untrusted); hello, when set, is called once the dialer said
// hello with a trusted key. On failure, claimed is the organism the dialer
// said it is ("" before its hello), unauthenticated, and g the gateway
// whose key it presented (nil: none).
func acceptHandshake(c *websocket.Conn, key ed25519.PrivateKey, organism string,
	trust func(ed25519.PublicKey) *gateway, cs *tls.ConnectionState, hello func(), now func() time.Time) (g *gateway, p peer, claimed string, err error) {
	_ = c.SetReadDeadline(time.Now().Add(handshakeTimeout))
	defer c.SetReadDeadline(time.Time{})
	c.SetReadLimit(handshakeFrameMax)
	tb, err := binding(cs)
	if err != nil {
		return nil, peer{}, claimed, err
	}
	hf, err := readFrame(c, frameHello)
	if err != nil {
		return nil, peer{}, claimed, err
	}
	claimed = hf.Organism
	ahead, clockKnown := clockOf(hf, now())
	dkey, err := unb64(hf.Key, ed25519.PublicKeySize, "key")
	if err != nil {
		return nil, peer{}, claimed, err
	}
	nd, err := unb64(hf.Nonce, 32, "nonce")
	if err != nil {
		return nil, peer{}, claimed, err
	}
	g = trust(dkey)
	if g == nil {
		_ = writeFrame(c, frame{Type: frameError, Error: "identity not trusted"})
		return nil, peer{}, claimed, fmt.Errorf("%w: key %s (organism %q) is no gateway's trusted_identity",
			ErrUntrusted, keys.Fingerprint(dkey), hf.Organism)
	}
	if hf.Organism == "" {
		// Every envelope of the link is checked against the organism its
		// handshake named: a link naming none would let the peer's
		// envelopes claim any <from>.
		_ = writeFrame(c, frame{Type: frameError, Error: namelessWhy("hello")})
		return g, peer{}, claimed, fmt.Errorf("%w: its hello (key %s, gateway %s) says no organism.name",
			ErrNameless, keys.Fingerprint(dkey), g.name)
	}
	if hello != nil {
		hello()
	}
	pub := key.Public().(ed25519.PublicKey)
	na := nonce()
	sig := ed25519.Sign(key, transcript("acceptor", dkey, pub, nd, na, tb))
	// From here on a failure is the link of g, whose key the dialer
	// presented: it is counted and logged under g's name.
	if err := writeFrame(c, frame{Type: frameChallenge, Key: b64(pub), Nonce: b64(na), Sig: b64(sig), Organism: organism, Time: stamp(now())}); err != nil {
		return g, peer{}, claimed, err
	}
	pf, err := readFrame(c, frameProof)
	if errors.Is(err, ErrRefused) {
		// The dialer does not trust this organism's key (this organism's
		// identity was rotated, say): its operator is told which key the
		// peer's gateway must trust.
		return g, peer{}, claimed, fmt.Errorf("%w (this organism's key is %s: the peer's gateway for it must trust "+
			"this organism's current `xmlpipe keys export` file)", err, keys.Fingerprint(pub))
	}
	if err != nil {
		return g, peer{}, claimed, err
	}
	psig, err := unb64(pf.Sig, ed25519.SignatureSize, "sig")
	if err != nil {
		return g, peer{}, claimed, err
	}
	if !ed25519.Verify(dkey, transcript("dialer", dkey, pub, nd, na, tb), psig) {
		_ = writeFrame(c, frame{Type: frameError, Error: "proof does not verify"})
		return g, peer{}, claimed, fmt.Errorf("%w (gateway %s)", ErrProof, g.name)
	}
	if err := writeFrame(c, frame{Type: frameWelcome}); err != nil {
		return g, peer{}, claimed, err
	}
	return g, peer{key: dkey, organism: hf.Organism, ahead: ahead, clockKnown: clockKnown}, claimed, nil
}

// namelessWhy is what a peer whose handshake frame (hello, challenge)
// names no organism is told.
func namelessWhy(what string) string {
	return "your " + what + " names no organism: the <from> of your envelopes is checked against it " +
		"(give the organism an organism.name)"
}

// refusedHandshake tells whether err ended a handshake that reached the
// peer: one side did not trust or could not verify the other, or the peer
// broke the protocol — not a connection that merely went away.
func refusedHandshake(err error) bool {
	return errors.Is(err, ErrUntrusted) || errors.Is(err, ErrProof) || errors.Is(err, ErrRefused) ||
		errors.Is(err, ErrProtocol) || errors.Is(err, ErrNameless)
}

// explainHandshake adds to err, a refused handshake of g's dial, what the
// operator changes to end it: the keys are shown as `xmlpipe keys show`
// prints them, and the file to replace is named.
func (g *gateway) explainHandshake(err error) error {
	switch {
	case errors.Is(err, ErrUntrusted) && !g.target.Load().registered:
		return fmt.Errorf("%w; if the peer's identity was rotated, put its new `xmlpipe keys export` file at %s "+
			"(gateway %s's trusted_identity) and reload or restart this organism", err, g.target.Load().identity, g.name)
	case errors.Is(err, ErrUntrusted):
		return fmt.Errorf("%w; if the peer's identity was rotated, register gateway %s again with its new identity", err, g.name)
	case errors.Is(err, ErrRefused):
		own := g.m.opts.Key.Public().(ed25519.PublicKey)
		return fmt.Errorf("%w (this organism's key is %s: the peer's gateway for it must trust "+
			"this organism's current `xmlpipe keys export` file)", err, keys.Fingerprint(own))
	}
	return err
}
