package envsig

import (
	"bytes"
	"encoding/base64"
	"encoding/xml"
	"fmt"
	"strings"
	"sync"

	"github.com/russellhaering/goxmldsig/types"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// The <Signature> Sign writes differs from one envelope to the next only in
// its DigestValue (the base64 of 32 bytes: 44 characters) and its
// SignatureValue (the base64 of 64 bytes: 88 characters). Its exclusive
// C14N, and that of its SignedInfo, are therefore fixed texts around those
// two values: template holds them, cut once from libxml2's own C14N of a
// Signature built with placeholder values. Sign writes the canonical
// Signature from the template instead of canonicalising it again, and
// Verify recognises an envelope that is its canonical form with the
// template's Signature in place, which therefore has the shape, algorithms
// and Reference of this package's profile, without canonicalising the
// Signature and its SignedInfo, decoding it with encoding/xml and
// validating it against profile.xsd (an envelope that differs in any byte
// takes the strict path).

const (
	digestLen = 44 // base64 of a SHA-256 sum
	valueLen  = 88 // base64 of an Ed25519 signature
)

// template is the canonical Signature cut around its two values.
type template struct {
	// siHead + digest + siTail is SignedInfo's exclusive C14N alone (what
	// the signature value is computed over).
	siHead, siTail []byte
	// sigHead + digest + sigMid + value + sigTail is the Signature's
	// exclusive C14N (as it stands in a canonical envelope).
	sigHead, sigMid, sigTail []byte
}

// canonicalTemplate is built on first use from libxml2's C14N.
var canonicalTemplate = sync.OnceValues(func() (*template, error) {
	digest := strings.Repeat("D", digestLen)
	value := strings.Repeat("V", valueLen)
	si := newSignedInfo(digest)
	siXML, err := xml.Marshal(si)
	if err != nil {
		return nil, err
	}
	siC14N, err := stage.Canonicalize(siXML)
	if err != nil {
		return nil, err
	}
	sigXML, err := xml.Marshal(signature{SignedInfo: si, SignatureValue: types.SignatureValue{Data: value}})
	if err != nil {
		return nil, err
	}
	sigC14N, err := stage.Canonicalize(sigXML)
	if err != nil {
		return nil, err
	}
	t := &template{}
	var ok bool
	if t.siHead, t.siTail, ok = bytes.Cut(siC14N, []byte(digest)); !ok || bytes.Contains(t.siTail, []byte(digest)) {
		return nil, fmt.Errorf("envsig: SignedInfo template: the digest is not there once")
	}
	var rest []byte
	if t.sigHead, rest, ok = bytes.Cut(sigC14N, []byte(digest)); !ok {
		return nil, fmt.Errorf("envsig: Signature template: no digest")
	}
	if t.sigMid, t.sigTail, ok = bytes.Cut(rest, []byte(value)); !ok ||
		bytes.Contains(t.sigTail, []byte(digest)) || bytes.Contains(t.sigTail, []byte(value)) {
		return nil, fmt.Errorf("envsig: Signature template: the values are not there once each")
	}
	return t, nil
})

// signedInfo appends SignedInfo's exclusive C14N for digest to dst.
func (t *template) signedInfo(dst []byte, digest string) []byte {
	dst = append(dst, t.siHead...)
	dst = append(dst, digest...)
	return append(dst, t.siTail...)
}

// signature appends the Signature's exclusive C14N to dst.
func (t *template) signature(dst []byte, digest, value string) []byte {
	dst = append(dst, t.sigHead...)
	dst = append(dst, digest...)
	dst = append(dst, t.sigMid...)
	dst = append(dst, value...)
	return append(dst, t.sigTail...)
}

// inPlace reports whether signed is unsigned (an envelope's exclusive C14N
// without its Signature) with the template's Signature inserted as the last
// child of meta, byte for byte, and returns its two values. Then the
// Signature libxml2 parsed in signed is that text, which is its own
// canonical form, and its SignedInfo's is the template's for the digest: the
// two need not be canonicalised again.
func (t *template) inPlace(signed, unsigned []byte) (digest, value []byte, ok bool) {
	at, ok := metaEnd(unsigned)
	n := len(t.sigHead) + digestLen + len(t.sigMid) + valueLen + len(t.sigTail)
	if !ok || len(signed) != len(unsigned)+n || !bytes.Equal(signed[:at], unsigned[:at]) ||
		!bytes.Equal(signed[at+n:], unsigned[at:]) {
		return nil, nil, false
	}
	sig := signed[at : at+n]
	if !bytes.HasPrefix(sig, t.sigHead) || !bytes.HasSuffix(sig, t.sigTail) ||
		!bytes.Equal(sig[len(t.sigHead)+digestLen:len(t.sigHead)+digestLen+len(t.sigMid)], t.sigMid) {
		return nil, nil, false
	}
	digest = sig[len(t.sigHead) : len(t.sigHead)+digestLen]
	value = sig[len(sig)-len(t.sigTail)-valueLen : len(sig)-len(t.sigTail)]
	return digest, value, true
}

// strictBase64 decodes s, base64 without whitespace, into a buffer of its
// decoded size.
func strictBase64(s []byte) ([]byte, error) {
	out := make([]byte, base64.StdEncoding.DecodedLen(len(s)))
	n, err := base64.StdEncoding.Strict().Decode(out, s)
	return out[:n], err
}

// metaEnd returns the offset of the end tag of the root's first child
// element in canon, an exclusive C14N document, by scanning its markup:
// there '<' starts a tag or a processing instruction (text and attribute
// values escape it), every element has an end tag, attribute values are in
// double quotes (which they escape), and comments are gone. ok is false
// for anything else (the caller falls back to containerEnd).
func metaEnd(canon []byte) (at int, ok bool) {
	depth := 0
	for i := 0; i < len(canon); {
		j := bytes.IndexByte(canon[i:], '<')
		if j < 0 {
			return 0, false
		}
		i += j
		if i+1 >= len(canon) {
			return 0, false
		}
		switch canon[i+1] {
		case '?':
			k := bytes.Index(canon[i:], []byte("?>"))
			if k < 0 {
				return 0, false
			}
			i += k + 2
		case '!':
			return 0, false // no comments, DOCTYPE or CDATA in C14N
		case '/':
			if depth == 2 {
				return i, true
			}
			depth--
			k := bytes.IndexByte(canon[i:], '>')
			if k < 0 || depth < 1 {
				return 0, false
			}
			i += k + 1
		default:
			depth++
			quoted := false
			k := i + 1
			for ; k < len(canon); k++ {
				if canon[k] == '"' {
					quoted = !quoted
				} else if canon[k] == '>' && !quoted {
					break
				}
			}
			if k == len(canon) || canon[k-1] == '/' {
				return 0, false
			}
			i = k + 1
		}
	}
	return 0, false
}
