package envsig

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/xml"
	"errors"
	"fmt"
	"io"

	"github.com/xml-pipeline/xmlpipe/schemas"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// Sign returns envelope with an Ed25519 enveloped signature appended as the
// last child of its <meta>. envelope must be a complete, well-formed
// <message> of the envelope namespace without a <Signature>. The result is
// exclusive C14N, so its bytes (and any hash of them) are what a verifier
// sees. A canonical envelope (as the pump builds them) is signed over its
// own bytes without a parse (canonical.go).
func Sign(key ed25519.PrivateKey, envelope []byte) ([]byte, error) {
	if len(key) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("%w: private key is %d bytes, want %d", ErrKey, len(key), ed25519.PrivateKeySize)
	}
	unsigned := envelope
	if !canonicalUnsigned(envelope) {
		parts, err := split(envelope)
		if err != nil {
			return nil, err
		}
		if parts.Count != 0 {
			return nil, fmt.Errorf("%w: the envelope already carries %d Signature element(s)", ErrMalformed, parts.Count)
		}
		unsigned = parts.Unsigned
	}
	t, err := canonicalTemplate()
	if err != nil {
		return nil, fmt.Errorf("envsig: Signature template: %w", err)
	}
	sum := sha256.Sum256(unsigned)
	var digest [digestLen]byte
	base64.StdEncoding.Encode(digest[:], sum[:])
	si := t.signedInfo(make([]byte, 0, len(t.siHead)+digestLen+len(t.siTail)), string(digest[:]))
	var value [valueLen]byte
	base64.StdEncoding.Encode(value[:], ed25519.Sign(key, si))
	// The unsigned envelope is canonical, and so is the Signature the
	// template writes (with its own default namespace, as exclusive C14N
	// renders it in place): inserting it keeps the whole canonical.
	at, ok := metaEnd(unsigned)
	if !ok {
		if at, err = containerEnd(unsigned); err != nil {
			return nil, err
		}
	}
	n := len(t.sigHead) + digestLen + len(t.sigMid) + valueLen + len(t.sigTail)
	out := make([]byte, 0, len(unsigned)+n)
	out = append(out, unsigned[:at]...)
	out = t.signature(out, string(digest[:]), string(value[:]))
	return append(out, unsigned[at:]...), nil
}

// split parses an envelope once with stage.SplitSignature and checks that
// it is a <message> whose first child is <meta>.
func split(envelope []byte) (*stage.SignatureParts, error) {
	return checkParts(stage.SplitSignature(envelope, Namespace, "Signature"))
}

// splitUnsigned is split without the Signature's own canonical forms
// (stage.SplitSignatureUnsigned).
func splitUnsigned(envelope []byte) (*stage.SignatureParts, error) {
	return checkParts(stage.SplitSignatureUnsigned(envelope, Namespace, "Signature"))
}

// checkParts checks that the split document is a <message> whose first
// child is <meta>.
func checkParts(parts *stage.SignatureParts, err error) (*stage.SignatureParts, error) {
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if want := (xml.Name{Space: schemas.EnvelopeNS, Local: "message"}); parts.Root != want {
		return nil, fmt.Errorf("%w: root is {%s}%s, want {%s}message", ErrMalformed, parts.Root.Space, parts.Root.Local, schemas.EnvelopeNS)
	}
	if want := (xml.Name{Space: schemas.EnvelopeNS, Local: "meta"}); parts.Container != want {
		return nil, fmt.Errorf("%w: first child of message is {%s}%s, want {%s}meta", ErrMalformed, parts.Container.Space, parts.Container.Local, schemas.EnvelopeNS)
	}
	return parts, nil
}

// containerEnd returns the offset of the end tag of the root's first child
// element in canon, an exclusive C14N document: there an end tag is exactly
// "</" QName ">", so the tag starts that many bytes before the decoder's
// offset after it.
func containerEnd(canon []byte) (int, error) {
	d := xml.NewDecoder(bytes.NewReader(canon))
	depth := 0
	for {
		tok, err := d.RawToken()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, fmt.Errorf("%w: reading the canonical envelope: %w", ErrMalformed, err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
		case xml.EndElement:
			if depth == 2 {
				n := len("</>") + len(t.Name.Local)
				if t.Name.Space != "" {
					n += len(t.Name.Space) + 1
				}
				return int(d.InputOffset()) - n, nil
			}
			depth--
		}
	}
	return 0, fmt.Errorf("%w: the canonical envelope has no end tag of meta", ErrMalformed)
}
