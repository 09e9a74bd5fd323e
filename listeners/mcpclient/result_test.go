package mcpclient

import (
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// TestFillStaysUnderTheSizeCap: whatever a server answers — megabytes of
// text, of an error, of structured content, of links, thousands of empty
// images, audio clips or resources with long URIs, all of it characters XML
// escapes — the result encodes under the pump's default message size cap
// (1 MiB), so the caller gets an answer instead of a message the pump
// rejects; what was cut is named in a Note, and a small result is carried
// unchanged.
func TestFillStaysUnderTheSizeCap(t *testing.T) {
	const capBytes = 1 << 20
	big := strings.Repeat("&<", 5<<20)
	links := make([]sdk.Content, 5000)
	for i := range links {
		links[i] = &sdk.ResourceLink{URI: "file:///" + strings.Repeat("x", 200), Name: strings.Repeat("&", 100)}
	}
	longURI := "mem://" + strings.Repeat("&", 1000)
	var resources, images, audio, emptyLinks, everything []sdk.Content
	for range 5000 {
		resources = append(resources, &sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: longURI, MIMEType: "text/plain"}})
		images = append(images, &sdk.ImageContent{MIMEType: strings.Repeat("&", 200)})
	}
	for range 30000 { // each small: only their number goes over the cap
		audio = append(audio, &sdk.AudioContent{MIMEType: "audio/x", Data: []byte{}})
		emptyLinks = append(emptyLinks, &sdk.ResourceLink{})
	}
	everything = append(everything, &sdk.TextContent{Text: big},
		&sdk.ImageContent{MIMEType: "image/png", Data: make([]byte, maxBinary)},
		&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: longURI, Blob: make([]byte, maxBinary)}})
	everything = append(everything, resources...)
	everything = append(everything, audio...)
	pt, err := xmlpipe.NewPayloadType(reflect.TypeFor[ToolResult]())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		result    *sdk.CallToolResult
		wantText  string
		wantNotes []string // substrings, in order
	}{
		{name: "small", result: &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "a <b>red</b> dot"}}},
			wantText: "a <b>red</b> dot"},
		{name: "huge text", result: &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: big},
			&sdk.ImageContent{MIMEType: "image/png", Data: make([]byte, maxBinary)}}},
			wantText: big[:maxText/6], wantNotes: []string{"text of 10485760 bytes cut after 43690 bytes"}},
		{name: "huge error", result: &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: big}}},
			wantNotes: []string{"text of 10485760 bytes cut"}},
		{name: "huge structured", result: &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ok"}},
			StructuredContent: map[string]any{"k": big}}, wantText: "ok", wantNotes: []string{"structured content of"}},
		{name: "huge resource", result: &sdk.CallToolResult{Content: []sdk.Content{
			&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "mem://a", Text: big}}}},
			wantNotes: []string{"resource text of 10485760 bytes cut"}},
		{name: "many links", result: &sdk.CallToolResult{Content: links},
			wantNotes: []string{"resource link of", "and "}},
		{name: "many empty links", result: &sdk.CallToolResult{Content: emptyLinks},
			wantNotes: []string{"resource link of", "and "}},
		{name: "many resources with long uris", result: &sdk.CallToolResult{Content: resources},
			wantNotes: []string{"resource mem://&&&", "… of", "and "}},
		{name: "many empty images", result: &sdk.CallToolResult{Content: images},
			wantNotes: []string{"image (&&&", "and "}},
		{name: "many empty audio clips", result: &sdk.CallToolResult{Content: audio},
			wantNotes: []string{"audio (audio/x) of", "and "}},
		{name: "everything at once", result: &sdk.CallToolResult{Content: everything},
			wantText: big[:maxText/6], wantNotes: []string{"resource mem://&&&", "text of", "and "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := &ToolResult{Tool: "t"}
			fill(res, tc.result)
			b, err := pt.AppendPayload(nil, res)
			if err != nil {
				t.Fatal(err)
			}
			if len(b) >= capBytes {
				t.Errorf("the result encodes to %d bytes, over the %d-byte cap", len(b), capBytes)
			}
			if !tc.result.IsError {
				if diff := cmp.Diff(tc.wantText, res.Text); tc.wantText != "" && diff != "" {
					t.Errorf("text (-want +got):\n%.400s", diff)
				}
			} else if !strings.HasPrefix(big, res.Error) || res.Error == "" {
				t.Errorf("error %.40q… is not a prefix of what the tool said", res.Error)
			}
			if len(tc.wantNotes) == 0 && len(res.Notes) > 0 {
				t.Errorf("notes %q for a result that fits", res.Notes)
			}
			if len(res.Notes) > maxNotes {
				t.Errorf("%d notes, at most %d", len(res.Notes), maxNotes)
			}
			rest := strings.Join(res.Notes, "\n")
			for _, w := range tc.wantNotes {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("notes %q lack %q", res.Notes, w)
				}
				rest = rest[i+len(w):]
			}
		})
	}
}
