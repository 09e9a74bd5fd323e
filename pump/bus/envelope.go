package bus

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/xml-pipeline/xmlpipe/schemas"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// messageID is the id of a message in the API, the message log and the
// journal: the SHA-256 (hex) of its canonical envelope.
func messageID(env []byte) string {
	sum := sha256.Sum256(env)
	return hex.EncodeToString(sum[:])
}

// payloadOf returns the payload element of a canonical envelope
// (stage.EnvelopePayload: whatever the root's prefix), without the xmlns=""
// a no-namespace payload carries only inside the envelope; nil when env is
// not a canonical envelope.
func payloadOf(env []byte) []byte {
	p, ok := stage.EnvelopePayload(env)
	if !ok {
		return nil
	}
	nameEnd := bytes.IndexAny(p, " >")
	if nameEnd > 0 && bytes.HasPrefix(p[nameEnd:], []byte(` xmlns=""`)) {
		out := make([]byte, 0, len(p)-9)
		out = append(out, p[:nameEnd]...)
		return append(out, p[nameEnd+9:]...)
	}
	return p
}

// frameInfo is what a quick look at a raw frame found (ok false: it is not
// well-formed even after the lexical pre-fix; the pump's repair path may
// still accept it).
type frameInfo struct {
	ok                     bool
	rootNS, rootName       string
	from, to, thread       string
	payloadNS, payloadName string
}

// privileged reports whether the frame's root or payload is in the
// privileged (OOB-only) namespace.
func (f frameInfo) privileged() bool {
	return f.rootNS == schemas.PrivilegedNS || f.payloadNS == schemas.PrivilegedNS
}

// scanFrame reads a frame's root element and, for an envelope, its <from>,
// <to>, <thread> and payload root; a frame that is not well-formed is looked at
// again after stage.LexFix.
func scanFrame(raw []byte) frameInfo {
	if f, err := scanXML(raw, false); err == nil {
		return f
	}
	fixed, _ := stage.LexFix(raw)
	if f, err := scanXML(fixed, false); err == nil {
		return f
	}
	return frameInfo{}
}

// scanHead is scanFrame up to the payload's start tag: what an envelope
// says of its target and thread, read without the payload (nor checking
// that the rest is well-formed), for the early busy check. ok false when
// what it read is not well-formed as it is; for a frame that is not an
// envelope, only its root is read.
func scanHead(raw []byte) frameInfo {
	f, err := scanXML(raw, true)
	if err != nil {
		return frameInfo{}
	}
	return f
}

// scanXML reads raw's root and, for an envelope, its <meta> fields and
// payload root: the whole of raw, which must be well-formed, unless head
// stops it at the payload's start tag (or at the root of a frame that is
// no envelope).
func scanXML(raw []byte, head bool) (frameInfo, error) {
	var f frameInfo
	d := xml.NewDecoder(bytes.NewReader(raw))
	d.Strict = true
	depth, children := 0, 0
	var field *string
	var text strings.Builder
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return frameInfo{}, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			switch {
			case depth == 1:
				f.rootNS, f.rootName = t.Name.Space, t.Name.Local
				if head && !f.envelope() {
					f.ok = true
					return f, nil
				}
			case depth == 2 && f.envelope():
				children++
				if children == 2 {
					f.payloadNS, f.payloadName = t.Name.Space, t.Name.Local
					if head {
						f.ok = true
						return f, nil
					}
				}
			case depth == 3 && f.envelope() && children == 1 && t.Name.Space == stage.EnvelopeNS:
				switch t.Name.Local {
				case "from":
					field = &f.from
				case "to":
					field = &f.to
				case "thread":
					field = &f.thread
				}
				text.Reset()
			}
		case xml.CharData:
			if field != nil {
				text.Write(t)
			}
		case xml.EndElement:
			if depth == 3 && field != nil {
				*field = strings.TrimSpace(text.String())
				field = nil
			}
			depth--
		case xml.Directive:
			return frameInfo{}, errors.New("directives are not allowed")
		}
	}
	if f.rootName == "" {
		return frameInfo{}, errors.New("no root element")
	}
	f.ok = true
	return f, nil
}

// envelope reports whether the root is a <message> envelope.
func (f frameInfo) envelope() bool {
	return f.rootNS == stage.EnvelopeNS && f.rootName == "message"
}

// withEmptyNamespace prepares a payload element given as XML text for
// stage.AppendEnvelope: it must be one element (an XML declaration and
// surrounding space are dropped); a root that declares no default namespace
// gets xmlns="" so it does not inherit the envelope's.
func withEmptyNamespace(payload string) ([]byte, error) {
	p := strings.TrimSpace(payload)
	if strings.HasPrefix(p, "<?xml") {
		end := strings.Index(p, "?>")
		if end < 0 {
			return nil, errors.New("unterminated XML declaration")
		}
		p = strings.TrimSpace(p[end+2:])
	}
	if len(p) < 2 || p[0] != '<' || p[1] == '!' || p[1] == '?' || p[1] == '/' {
		return nil, errors.New("payload must start with its root element")
	}
	d := xml.NewDecoder(strings.NewReader(p))
	d.Strict = true
	var root *xml.StartElement
	depth := 0
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("payload is not well-formed XML: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if depth == 0 && root != nil {
				return nil, errors.New("payload has more than one root element")
			}
			if root == nil {
				t := t.Copy()
				root = &t
			}
			depth++
		case xml.EndElement:
			depth--
		case xml.CharData:
			if depth == 0 && len(bytes.TrimSpace(t)) > 0 {
				return nil, errors.New("payload has text outside its root element")
			}
		case xml.Directive:
			return nil, errors.New("payload must not contain a DOCTYPE or other directive")
		}
	}
	if root == nil {
		return nil, errors.New("payload has no root element")
	}
	for _, a := range root.Attr {
		if a.Name.Space == "" && a.Name.Local == "xmlns" {
			return []byte(p), nil
		}
	}
	nameEnd := strings.IndexAny(p, " \t\r\n/>")
	if nameEnd < 0 {
		return nil, errors.New("payload has no root element")
	}
	return []byte(p[:nameEnd] + ` xmlns=""` + p[nameEnd:]), nil
}

// huhEnvelope builds the <huh> envelope the bus sends for a frame it
// refused: from core, to the frame's sender (when known), on the frame's
// thread (or a new one).
func (s *Server) huhEnvelope(to, thread string, huh *xmlpipe.Huh) []byte {
	if !stage.IsThreadID(thread) {
		thread = stage.NewThreadID()
	}
	body, err := s.core.Huh.AppendPayload(nil, huh)
	if err != nil {
		s.log.Error("encode huh", "error", err)
		return nil
	}
	return stage.AppendEnvelope(nil, "core", to, thread, body)
}
