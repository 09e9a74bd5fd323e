package oob

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/xml"
	"fmt"
	"strings"
	"time"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// Algorithm is the one signature algorithm accepted.
const Algorithm = "ed25519"

// SignRequest builds a complete signed <privileged-msg>: op is the
// operation element (one of the XSD's request choices, in NS or declaring
// xmlns="https://xml-pipeline.org/privileged-msg" itself), id the request id
// echoed in the response, now the timestamp. The signature is Ed25519 over
// the exclusive C14N of <payload>, base64 in <signature algorithm="ed25519">,
// the sibling after <payload>.
func SignRequest(key ed25519.PrivateKey, id string, now time.Time, op []byte) ([]byte, error) {
	var p bytes.Buffer
	p.WriteString(`<payload`)
	if id != "" {
		p.WriteString(` id="`)
		if err := xml.EscapeText(&p, []byte(id)); err != nil {
			return nil, err
		}
		p.WriteString(`"`)
	}
	p.WriteString(` timestamp="` + now.UTC().Format(time.RFC3339Nano) + `">`)
	p.Write(op)
	p.WriteString(`</payload>`)
	head := `<privileged-msg xmlns="` + NS + `" version="` + Version + `">`
	unsigned := head + p.String() + `</privileged-msg>`
	c, err := stage.CanonicalizeChild([]byte(unsigned), NS, "payload")
	if err != nil {
		return nil, fmt.Errorf("oob: sign: %w", err)
	}
	sig := base64.StdEncoding.EncodeToString(ed25519.Sign(key, c))
	return []byte(head + p.String() + `<signature algorithm="` + Algorithm + `">` + sig + `</signature></privileged-msg>`), nil
}

// verifySignature checks sig over the canonical <payload> of raw and
// returns the decoded signature: the replay cache keys on these bytes, not
// on the base64 text, whose whitespace and line breaks a replayer could
// vary. (Go's ed25519.Verify rejects non-canonical signatures, so one
// message has one accepted signature encoding.)
func verifySignature(pub ed25519.PublicKey, raw []byte, sig *Signature) ([]byte, error) {
	if sig.Algorithm != "" && sig.Algorithm != Algorithm {
		return nil, fmt.Errorf("algorithm %q (only %s)", sig.Algorithm, Algorithm)
	}
	text := strings.Map(func(r rune) rune {
		if r == ' ' || r == '\t' || r == '\n' || r == '\r' {
			return -1
		}
		return r
	}, sig.Value)
	b, err := base64.StdEncoding.DecodeString(text)
	if err != nil {
		return nil, fmt.Errorf("signature is not base64: %w", err)
	}
	if len(b) != ed25519.SignatureSize {
		return nil, fmt.Errorf("signature is %d bytes, want %d", len(b), ed25519.SignatureSize)
	}
	c, err := stage.CanonicalizeChild(raw, NS, "payload")
	if err != nil {
		return nil, fmt.Errorf("payload: %w", err)
	}
	if !ed25519.Verify(pub, c, b) {
		return nil, fmt.Errorf("signature does not verify with the owner key")
	}
	return b, nil
}
