package mcpclient

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxBinary bounds the binary content (images, audio, blobs) one result
// carries inline; past it an item is named in a Note instead, so the answer
// stays under the pump's message size cap.
const maxBinary = 512 << 10

// maxText bounds the text one result carries (its Text or Error, its
// structured content and the texts of its embedded resources together),
// counted as the XML that carries it: with maxBinary's base64 it keeps the
// answer under the pump's default message size cap (1 MiB). Text past it
// is cut, and a Note says how much was left out.
const maxText = 256 << 10

// maxNotes bounds the Notes of one result; the last one counts the rest.
const maxNotes = 16

// itemOverhead bounds the markup of one carried item (its element, attribute
// names and child tags, a link's Size) beyond the text it holds: every image,
// audio clip, resource and link costs it from the text budget, so a result
// of many empty items stays under the size cap too.
const itemOverhead = 160

// maxQuoted bounds what a Note quotes of a server's string (a URI, a MIME
// type), in runes.
const maxQuoted = 64

// ToolResult is what a mounted tool answers: its content, each kind as its
// own element, or the error it reported. Nothing the tool returned is
// dropped without a Note saying so.
type ToolResult struct {
	Tool  string
	Text  string `xml:",omitempty" doc:"the tool's text content"`
	Error string `xml:",omitempty" doc:"the error the tool reported, or why it could not be called"`
	// Structured is the tool's structured content as JSON.
	Structured *string        `xml:",omitempty" encoding:"json" doc:"the tool's structured content (JSON)"`
	Images     []Media        `xml:"Image,omitempty" doc:"images the tool returned"`
	Audio      []Media        `xml:"Audio,omitempty" doc:"audio the tool returned"`
	Resources  []Resource     `xml:"Resource,omitempty" doc:"resources the tool embedded"`
	Links      []ResourceLink `xml:"ResourceLink,omitempty" doc:"resources the tool pointed to"`
	Notes      []string       `xml:"Note,omitempty" doc:"content that could not be carried, and why"`
}

// Media is an image or audio clip.
type Media struct {
	MIMEType string `xml:"mimeType,attr"`
	Data     []byte `doc:"the bytes (base64)"`
}

// Resource is an embedded resource: text or bytes.
type Resource struct {
	URI      string `xml:"uri,attr"`
	MIMEType string `xml:"mimeType,attr,omitempty"`
	Text     string `xml:",omitempty"`
	Blob     []byte `xml:",omitempty"`
}

// ResourceLink points to a resource the client may read.
type ResourceLink struct {
	URI         string `xml:"uri,attr"`
	Name        string `xml:"name,attr"`
	Title       string `xml:",omitempty"`
	Description string `xml:",omitempty"`
	MIMEType    string `xml:",omitempty"`
	Size        *int64 `xml:",omitempty"`
}

// fill sets res from a tool's result.
func fill(res *ToolResult, r *sdk.CallToolResult) {
	var (
		texts  []string
		budget = maxBinary
	)
	carry := func(what string, n int) bool {
		if n > budget {
			res.Notes = append(res.Notes, fmt.Sprintf("%s of %d bytes not carried: over the %d bytes a result holds", what, n, maxBinary))
			return false
		}
		budget -= n
		return true
	}
	for _, c := range r.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			texts = append(texts, c.Text)
		case *sdk.ImageContent:
			if carry("image ("+quoted(c.MIMEType)+")", len(c.Data)) {
				res.Images = append(res.Images, Media{MIMEType: c.MIMEType, Data: c.Data})
			}
		case *sdk.AudioContent:
			if carry("audio ("+quoted(c.MIMEType)+")", len(c.Data)) {
				res.Audio = append(res.Audio, Media{MIMEType: c.MIMEType, Data: c.Data})
			}
		case *sdk.EmbeddedResource:
			if c.Resource == nil {
				res.Notes = append(res.Notes, "an embedded resource without contents")
				continue
			}
			rc := Resource{URI: c.Resource.URI, MIMEType: c.Resource.MIMEType, Text: c.Resource.Text}
			if len(c.Resource.Blob) > 0 && carry("resource "+quoted(c.Resource.URI), len(c.Resource.Blob)) {
				rc.Blob = c.Resource.Blob
			}
			res.Resources = append(res.Resources, rc)
		case *sdk.ResourceLink:
			res.Links = append(res.Links, ResourceLink{URI: c.URI, Name: c.Name, Title: c.Title,
				Description: c.Description, MIMEType: c.MIMEType, Size: c.Size})
		default:
			res.Notes = append(res.Notes, fmt.Sprintf("content of type %T not carried", c))
		}
	}
	text := strings.Join(texts, "\n")
	var structured string
	if r.StructuredContent != nil {
		if b, err := json.Marshal(r.StructuredContent); err == nil {
			structured = string(b)
			if text == "" {
				text = structured
			}
		} else {
			res.Notes = append(res.Notes, "structured content not carried: "+err.Error())
		}
	}
	textBudget := maxText
	text = clipText(res, "text", text, &textBudget)
	if structured != "" {
		if n := xmlSize(structured); n > textBudget {
			res.Notes = append(res.Notes, fmt.Sprintf("structured content of %d bytes not carried: over the %d bytes of text a result holds",
				len(structured), maxText))
		} else {
			textBudget -= n
			res.Structured = &structured
		}
	}
	fits := func(what string, n int) bool {
		if n > textBudget {
			res.Notes = append(res.Notes, fmt.Sprintf("%s of %d bytes not carried: over the %d bytes of text a result holds",
				what, n, maxText))
			return false
		}
		textBudget -= n
		return true
	}
	resources := res.Resources[:0]
	for _, r := range res.Resources {
		if !fits("resource "+quoted(r.URI), itemOverhead+xmlSize(r.URI)+xmlSize(r.MIMEType)) {
			continue
		}
		r.Text = clipText(res, "resource text", r.Text, &textBudget)
		resources = append(resources, r)
	}
	res.Resources = resources
	res.Images = slices.DeleteFunc(res.Images, func(m Media) bool {
		return !fits("image ("+quoted(m.MIMEType)+")", itemOverhead+xmlSize(m.MIMEType))
	})
	res.Audio = slices.DeleteFunc(res.Audio, func(m Media) bool {
		return !fits("audio ("+quoted(m.MIMEType)+")", itemOverhead+xmlSize(m.MIMEType))
	})
	res.Links = slices.DeleteFunc(res.Links, func(l ResourceLink) bool {
		return !fits("resource link", itemOverhead+xmlSize(l.URI)+xmlSize(l.Name)+xmlSize(l.Title)+
			xmlSize(l.Description)+xmlSize(l.MIMEType))
	})
	if len(res.Notes) > maxNotes {
		res.Notes = append(res.Notes[:maxNotes-1], fmt.Sprintf("and %d more notes", len(res.Notes)-maxNotes+1))
	}
	if r.IsError {
		res.Error = text
		if res.Error == "" {
			res.Error = "the tool reported an error without text"
		}
	} else {
		res.Text = text
	}
}

// clipText returns s cut to what *budget leaves (counted by xmlSize, on a
// rune boundary), takes what it keeps from *budget and adds a Note to res
// when it cut anything.
func clipText(res *ToolResult, what, s string, budget *int) string {
	if n := xmlSize(s); n <= *budget {
		*budget -= n
		return s
	}
	used, end := 0, 0
	for end < len(s) {
		c, w := utf8.DecodeRuneInString(s[end:])
		n := runeXMLSize(c)
		if used+n > *budget {
			break
		}
		used, end = used+n, end+w
	}
	*budget -= used
	res.Notes = append(res.Notes, fmt.Sprintf("%s of %d bytes cut after %d bytes: over the %d bytes of text a result holds",
		what, len(s), end, maxText))
	return s[:end]
}

// quoted is s as a Note quotes it: at most maxQuoted runes, cut with "…".
func quoted(s string) string {
	i, n := 0, 0
	for i < len(s) && n < maxQuoted {
		_, w := utf8.DecodeRuneInString(s[i:])
		i, n = i+w, n+1
	}
	if i < len(s) {
		return s[:i] + "…"
	}
	return s
}

// xmlSize bounds the bytes s takes as XML character data.
func xmlSize(s string) int {
	n := 0
	for _, c := range s {
		n += runeXMLSize(c)
	}
	return n
}

// runeXMLSize bounds the bytes rune c takes as XML character data: a
// character that is escaped, or a control character, as a reference; invalid
// UTF-8 (utf8.RuneError) as U+FFFD.
func runeXMLSize(c rune) int {
	switch {
	case c == utf8.RuneError:
		return 3
	case c < 0x20 || c == '<' || c == '>' || c == '&' || c == '"' || c == '\'':
		return 6
	}
	return utf8.RuneLen(c)
}
