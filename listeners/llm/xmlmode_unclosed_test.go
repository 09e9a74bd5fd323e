package llm

import (
	"testing"

	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// TestXMLModeEmptyUnclosedTagIsProse: in XML mode a peer's start tag left
// unclosed with nothing after it is not an element, so not a message: the
// reply — markup and all — reaches the caller as the answer, and the model
// is not asked again; so is one named in prose, text after it ("payload
// <PoetTask>)."), as a model quoting a refusal's hint writes it. An
// unclosed element whose content is markup is still a message (the pump's
// repair closes it).
func TestXMLModeEmptyUnclosedTagIsProse(t *testing.T) {
	tests := []struct {
		name, reply string
		answer      bool
	}{
		{"a bare start tag ends the prose", "It is <i>42</i> & done <Calc>", true},
		{"a bare start tag, then white space", "It is 42. <PoetTask> \n", true},
		{"a start tag never ended", "It is 42 <PoetTask attr", true},
		{"a tag named in prose, text after it", "Peers you may address: poet (payload <PoetTask>).", true},
		{"a tag named mid-sentence", "Use the <PoetTask> payload to ask the poet.", true},
		{"an unclosed element with content", "<PoetTask><Text>rain</Text>", false},
		{"a tag named in prose, then a message", "The <PoetTask> goes out: <PoetTask><Text>rain</Text></PoetTask>", false},
		{"a closed element", "Asking. <PoetTask><Text>rain</Text></PoetTask>", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newLoopRig(t, Reply{Content: tc.reply}, Reply{Content: "asked again"})
			r.a.ToolCalling = XMLTools
			resp := r.deliver("console", "what is 6*7?", "")
			if !tc.answer {
				if _, ok := resp.(*xmlpipe.RawResponse); !ok {
					t.Errorf("response %T, want the message sent", resp)
				}
				return
			}
			if got := answerText(resp); got != tc.reply {
				t.Errorf("answer %q, want the reply as written %q", got, tc.reply)
			}
			if n := len(r.model.requests()); n != 1 {
				t.Errorf("the model was asked %d times, want once", n)
			}
		})
	}
}
