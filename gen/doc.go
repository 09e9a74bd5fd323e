// Package gen derives everything a listener's payload contract needs from a plain
// Go struct: a type model (Describe), the XSD the pump validates against (XSD),
// an example instance (Example) and the LLM tool-prompt text (PromptSection,
// UsageInstructions) and the JSON Schema of its JSON form (JSONSchema, shared by
// the MCP bridge, mounted MCP tools and LLM tool calling). WriteTree and CheckTree write and verify the generated
// files under schemas/ for go generate.
//
// Struct tags understood on fields:
//
//	xml:"Name"          element name (default: the Go field name)
//	xml:"Name,attr"     an attribute instead of a child element
//	xml:"A>B"           a wrapper element A holding repeated B elements (slices only)
//	xml:",omitempty"    optional: minOccurs="0" (pointers are optional too)
//	xml:"-"             skipped
//	doc:"text"          xs:documentation, shown to models in the prompt
//	enum:"a|b"          an enumeration (string kinds only)
//	encoding:"json"     the text is one JSON value (a string field): JSON
//	                    ingresses take and give it as native JSON
//	jsonschema:"{…}"    JSON Schema keywords (a JSON object) laid over the
//	                    field's derived schema: default, minimum, minItems, …
//	                    (on XMLName: over the payload object's schema)
//
// An XMLName xml.Name field on the payload type sets the root element's local
// name and, optionally, its namespace (xml:"https://… Order").
package gen
