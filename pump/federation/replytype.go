package federation

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	fieldlist "github.com/xml-pipeline/xmlpipe/xmlpipe/fields"
)

// errReplyShape: an answer this side has no payload type for and cannot
// type from its shape.
var errReplyShape = errors.New("only an unqualified root with distinct simple-text children can be returned to a non-agent caller")

// replyTypes caches the payload types built for answers, by shape.
var replyTypes sync.Map // shape string → *xmlpipe.PayloadType

// replyValue decodes an answer from the peer, whose Go type this side does
// not have, into a payload value: its type is built from the answer's shape
// (an unqualified root whose children are distinct elements holding text),
// every field a string kept exactly as sent.
func replyValue(payload []byte) (any, error) {
	root, fields, err := shapeOf(payload)
	if err != nil {
		return nil, err
	}
	key := root + "\x00" + strings.Join(fields, "\x00")
	var pt *xmlpipe.PayloadType
	if v, ok := replyTypes.Load(key); ok {
		pt = v.(*xmlpipe.PayloadType)
	} else {
		f := fieldlist.List{Root: root}
		for _, name := range fields {
			f.Fields = append(f.Fields, fieldlist.Field{Name: name, Type: "string", Optional: true})
		}
		pt, err = f.PayloadType(nil)
		if err != nil {
			return nil, err
		}
		replyTypes.Store(key, pt)
	}
	return pt.Decode(payload)
}

// shapeOf reads the root name and child names of a payload element.
func shapeOf(payload []byte) (root string, fields []string, err error) {
	d := xml.NewDecoder(bytes.NewReader(payload))
	depth := 0
	seen := map[string]bool{}
	for {
		tok, err := d.Token()
		if err != nil {
			if depth == 0 && root != "" {
				return root, fields, nil
			}
			return "", nil, fmt.Errorf("%w: %w", errReplyShape, err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			switch depth {
			case 1:
				if t.Name.Space != "" || hasAttrs(t) {
					return "", nil, errReplyShape
				}
				root = t.Name.Local
			case 2:
				if t.Name.Space != "" || hasAttrs(t) || seen[t.Name.Local] {
					return "", nil, errReplyShape
				}
				seen[t.Name.Local] = true
				fields = append(fields, t.Name.Local)
			default:
				return "", nil, errReplyShape
			}
		case xml.EndElement:
			depth--
			if depth == 0 {
				return root, fields, nil
			}
		}
	}
}

// hasAttrs reports attributes other than namespace declarations.
func hasAttrs(t xml.StartElement) bool {
	for _, a := range t.Attr {
		if a.Name.Space != "xmlns" && !(a.Name.Space == "" && a.Name.Local == "xmlns") {
			return true
		}
	}
	return false
}
