// Package xmltools holds the xml_to_json, json_to_xml and xml_extract tools:
// the reference's conversions (keeping leaf attributes, which the reference
// drops) and XPath 1.0 through libxml2 (not ElementTree's subset).
package xmltools

import (
	"context"
	"fmt"
	"strconv"

	"github.com/xml-pipeline/xmlpipe/listeners/tools"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// Tool names in tools: and tool_config:.
const (
	XMLToJSONName = "xml_to_json"
	JSONToXMLName = "json_to_xml"
	ExtractName   = "xml_extract"
)

// DefaultMaxBytes caps inputs and outputs.
const DefaultMaxBytes = 256 << 10

// Tool serves the three tools.
type Tool struct {
	Policy tools.Policy
	// Callers lets an answer reach a caller that takes another payload
	// (an agent takes text); nil: answer in the result type.
	Callers tools.Callers
}

func (t *Tool) maxBytes(caller, tool string) int {
	if t.Policy == nil {
		return DefaultMaxBytes
	}
	return tools.Or(t.Policy.Config(caller, tool).MaxBytes, DefaultMaxBytes)
}

func tooLarge(what string, n, max int) error {
	return fmt.Errorf("%s is %d bytes (max: %d)", what, n, max)
}

// MaxCarried bounds a result's text counted as the answer carries it
// (tools.CarriedSize: escaped), whatever max_bytes says: it keeps the
// answer under the pump's default message size cap, so markup-heavy output
// within max_bytes is refused with a reason instead of by the pump.
const MaxCarried = stage.DefaultMaxBytes - 64<<10

// matchOverhead bounds the markup of one Match beyond its text.
const matchOverhead = 128

// tooLargeCarried refuses a result whose escaped size n passes MaxCarried.
func tooLargeCarried(what string, n int) error {
	return fmt.Errorf("%s is %d bytes as the answer carries it (escaped; max: %d)", what, n, MaxCarried)
}

// XMLToJSON implements xml_to_json.
func (t *Tool) XMLToJSON(_ context.Context, p *XMLToJSON, md xmlpipe.Metadata) (xmlpipe.Response, error) {
	res := &XMLToJSONResult{}
	max := t.maxBytes(md.From, XMLToJSONName)
	if len(p.XML) > max { // refused before any parsing
		res.Error = tooLarge("the XML", len(p.XML), max).Error()
		return tools.Answer(t.Callers, md, res), nil
	}
	switch out, err := XMLToJSONText(p.XML, p.KeepRoot); {
	case err != nil:
		res.Error = err.Error()
	case len(out) > max:
		res.Error = tooLarge("the JSON", len(out), max).Error()
	case tools.CarriedSize(out) > MaxCarried:
		res.Error = tooLargeCarried("the JSON", tools.CarriedSize(out)).Error()
	default:
		res.JSON = tools.Text([]byte(out))
	}
	return tools.Answer(t.Callers, md, res), nil
}

// JSONToXML implements json_to_xml.
func (t *Tool) JSONToXML(_ context.Context, p *JSONToXML, md xmlpipe.Metadata) (xmlpipe.Response, error) {
	res := &JSONToXMLResult{}
	max := t.maxBytes(md.From, JSONToXMLName)
	if len(p.JSON) > max {
		res.Error = tooLarge("the JSON", len(p.JSON), max).Error()
		return tools.Answer(t.Callers, md, res), nil
	}
	switch out, err := JSONToXMLText(p.JSON, p.RootTag, p.Pretty); {
	case err != nil:
		res.Error = err.Error()
	case len(out) > max:
		res.Error = tooLarge("the XML", len(out), max).Error()
	case tools.CarriedSize(out) > MaxCarried:
		res.Error = tooLargeCarried("the XML", tools.CarriedSize(out)).Error()
	default:
		res.XML = tools.Text([]byte(out))
	}
	return tools.Answer(t.Callers, md, res), nil
}

// Extract implements xml_extract.
func (t *Tool) Extract(ctx context.Context, p *XMLExtract, md xmlpipe.Metadata) (xmlpipe.Response, error) {
	res := &XMLExtractResult{}
	max := t.maxBytes(md.From, ExtractName)
	if len(p.XML) > max {
		res.Error = tooLarge("the XML", len(p.XML), max).Error()
		return tools.Answer(t.Callers, md, res), nil
	}
	ns := map[string]string{}
	for _, n := range p.Namespaces {
		ns[n.Prefix] = n.URI
	}
	// The evaluation stops at the handler's deadline, and once its result
	// passes max (before copying the rest).
	r, err := stage.EvalXPath(ctx, []byte(p.XML), p.XPath, ns, max)
	if err != nil {
		res.Error = err.Error()
		return tools.Answer(t.Callers, md, res), nil
	}
	res.Type = r.Type
	switch r.Type {
	case "nodeset":
		size, carried := 0, 0
		for _, n := range r.Nodes {
			m := Match{Kind: n.Kind, Name: n.Name, Namespace: n.Namespace, Value: tools.Text([]byte(n.Value)),
				XML: tools.Text(n.XML)}
			size += len(m.Value) + len(m.XML)
			carried += tools.CarriedSize(m.Name) + tools.CarriedSize(m.Namespace) + tools.CarriedSize(m.Value) +
				tools.CarriedSize(m.XML) + matchOverhead
			if size > max || carried > MaxCarried {
				res.Error = tooLarge("the result", size, max).Error()
				if size <= max {
					res.Error = tooLargeCarried("the result", carried).Error()
				}
				res.Matches = nil
				break
			}
			res.Matches = append(res.Matches, m)
		}
		res.Count = len(r.Nodes)
	case "boolean":
		res.Value = strconv.FormatBool(r.Boolean)
	case "number":
		res.Value = strconv.FormatFloat(r.Number, 'g', -1, 64)
	default:
		res.Value = tools.Text([]byte(r.String))
	}
	return tools.Answer(t.Callers, md, res), nil
}
