package mcpclient

import (
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxBinary bounds the binary content (images, audio, blobs) one result
// carries inline; past it an item is named in a Note instead, so the answer
// stays under the pump's message size cap.
const maxBinary = 512 << 10

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
			if carry("image ("+c.MIMEType+")", len(c.Data)) {
				res.Images = append(res.Images, Media{MIMEType: c.MIMEType, Data: c.Data})
			}
		case *sdk.AudioContent:
			if carry("audio ("+c.MIMEType+")", len(c.Data)) {
				res.Audio = append(res.Audio, Media{MIMEType: c.MIMEType, Data: c.Data})
			}
		case *sdk.EmbeddedResource:
			if c.Resource == nil {
				res.Notes = append(res.Notes, "an embedded resource without contents")
				continue
			}
			rc := Resource{URI: c.Resource.URI, MIMEType: c.Resource.MIMEType, Text: c.Resource.Text}
			if len(c.Resource.Blob) > 0 && carry("resource "+c.Resource.URI, len(c.Resource.Blob)) {
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
	if r.StructuredContent != nil {
		if b, err := json.Marshal(r.StructuredContent); err == nil {
			s := string(b)
			res.Structured = &s
			if text == "" {
				text = s
			}
		} else {
			res.Notes = append(res.Notes, "structured content not carried: "+err.Error())
		}
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
