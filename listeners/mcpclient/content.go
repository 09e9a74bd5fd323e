package mcpclient

import (
	"encoding/json"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// CallToolResult gives the tool's answer back to an MCP client as the
// content it was: text, images, audio, resources and links, structured
// content, and the notes of what the mount could not carry. The MCP server
// (pump/mcp) answers with it when a conversation ends on a mounted tool.
func (tr *ToolResult) CallToolResult() *sdk.CallToolResult {
	r := &sdk.CallToolResult{}
	text := tr.Text
	if tr.Error != "" {
		r.IsError, text = true, tr.Error
	}
	if text != "" {
		r.Content = append(r.Content, &sdk.TextContent{Text: text})
	}
	for _, m := range tr.Images {
		r.Content = append(r.Content, &sdk.ImageContent{MIMEType: m.MIMEType, Data: m.Data})
	}
	for _, m := range tr.Audio {
		r.Content = append(r.Content, &sdk.AudioContent{MIMEType: m.MIMEType, Data: m.Data})
	}
	for _, res := range tr.Resources {
		r.Content = append(r.Content, &sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: res.URI,
			MIMEType: res.MIMEType, Text: res.Text, Blob: res.Blob}})
	}
	for _, l := range tr.Links {
		r.Content = append(r.Content, &sdk.ResourceLink{URI: l.URI, Name: l.Name, Title: l.Title,
			Description: l.Description, MIMEType: l.MIMEType, Size: l.Size})
	}
	for _, n := range tr.Notes {
		r.Content = append(r.Content, &sdk.TextContent{Text: "note: " + n})
	}
	if tr.Structured != nil && json.Valid([]byte(*tr.Structured)) {
		r.StructuredContent = json.RawMessage(*tr.Structured)
	}
	if len(r.Content) == 0 {
		r.Content = []sdk.Content{&sdk.TextContent{Text: ""}}
	}
	return r
}
