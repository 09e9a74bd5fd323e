package catalog

import (
	"context"
	"log/slog"
	"reflect"

	"github.com/xml-pipeline/xmlpipe/listeners/tools/calculate"
	"github.com/xml-pipeline/xmlpipe/listeners/tools/command"
	"github.com/xml-pipeline/xmlpipe/listeners/tools/fetch"
	"github.com/xml-pipeline/xmlpipe/listeners/tools/files"
	"github.com/xml-pipeline/xmlpipe/listeners/tools/kv"
	"github.com/xml-pipeline/xmlpipe/listeners/tools/librarian"
	"github.com/xml-pipeline/xmlpipe/listeners/tools/search"
	"github.com/xml-pipeline/xmlpipe/listeners/tools/xmltools"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// addTools registers the native tools: for each, its request and result
// payloads, its handler and its tool entry.
func addTools(c *Catalog) {
	c.AddPayload(Payload{Name: "tools.Calculate", Type: reflect.TypeFor[calculate.Calculate](), Listener: calculate.Name,
		Description: "Evaluates an arithmetic expression"})
	c.AddPayload(Payload{Name: "tools.CalculateResult", Type: reflect.TypeFor[calculate.CalculateResult]()})
	c.AddHandler(Handler{Name: "tools.Calculate", Takes: reflect.TypeFor[calculate.Calculate](),
		New: func(env Env) xmlpipe.Handler {
			return xmlpipe.Typed((&calculate.Tool{Policy: env.Tools, Callers: env.Callers}).Handle)
		}})
	c.AddTool(Tool{Name: calculate.Name, PayloadClass: "tools.Calculate", Handler: "tools.Calculate",
		Description: "Evaluates an arithmetic expression"})

	c.AddPayload(Payload{Name: "tools.Files", Type: reflect.TypeFor[files.Files](), Listener: files.Name,
		Description: "Reads, writes, lists and deletes files inside the configured roots"})
	c.AddPayload(Payload{Name: "tools.FilesResult", Type: reflect.TypeFor[files.FilesResult]()})
	c.AddHandler(Handler{Name: "tools.Files", Takes: reflect.TypeFor[files.Files](),
		New: func(env Env) xmlpipe.Handler {
			return xmlpipe.Typed((&files.Tool{Policy: env.Tools, Callers: env.Callers}).Handle)
		}})
	c.AddTool(Tool{Name: files.Name, PayloadClass: "tools.Files", Handler: "tools.Files",
		Description: "Reads, writes, lists and deletes files inside the configured roots"})

	c.AddPayload(Payload{Name: "tools.RunCommand", Type: reflect.TypeFor[command.RunCommand](), Listener: command.Name,
		Description: "Runs an allowed program without a shell"})
	c.AddPayload(Payload{Name: "tools.RunCommandResult", Type: reflect.TypeFor[command.RunCommandResult]()})
	c.AddHandler(Handler{Name: "tools.RunCommand", Takes: reflect.TypeFor[command.RunCommand](),
		New: func(env Env) xmlpipe.Handler {
			return xmlpipe.Typed((&command.Tool{Policy: env.Tools, Callers: env.Callers}).Handle)
		}})
	c.AddTool(Tool{Name: command.Name, PayloadClass: "tools.RunCommand", Handler: "tools.RunCommand",
		Description: "Runs an allowed program without a shell"})

	c.AddPayload(Payload{Name: "tools.Fetch", Type: reflect.TypeFor[fetch.Fetch](), Listener: fetch.Name,
		Description: "Fetches an http(s) URL on a public host"})
	c.AddPayload(Payload{Name: "tools.FetchResult", Type: reflect.TypeFor[fetch.FetchResult]()})
	c.AddHandler(Handler{Name: "tools.Fetch", Takes: reflect.TypeFor[fetch.Fetch](),
		New: func(env Env) xmlpipe.Handler {
			return xmlpipe.Typed((&fetch.Tool{Policy: env.Tools, Callers: env.Callers}).Handle)
		}})
	c.AddTool(Tool{Name: fetch.Name, PayloadClass: "tools.Fetch", Handler: "tools.Fetch",
		Description: "Fetches an http(s) URL on a public host"})

	c.AddPayload(Payload{Name: "tools.KeyValue", Type: reflect.TypeFor[kv.KeyValue](), Listener: kv.Name,
		Description: "Gets, sets and deletes values, per thread or in a named namespace, with expiry"})
	c.AddPayload(Payload{Name: "tools.KeyValueResult", Type: reflect.TypeFor[kv.KeyValueResult]()})
	c.AddHandler(Handler{Name: "tools.KeyValue", Takes: reflect.TypeFor[kv.KeyValue](), New: newKeyValue})
	c.AddTool(Tool{Name: kv.Name, PayloadClass: "tools.KeyValue", Handler: "tools.KeyValue",
		Description: "Gets, sets and deletes values, per thread or in a named namespace, with expiry"})
	c.AddPayload(Payload{Name: "tools.WebSearch", Type: reflect.TypeFor[search.WebSearch](), Listener: search.Name,
		Description: "Searches the web through the configured provider"})
	c.AddPayload(Payload{Name: "tools.WebSearchResult", Type: reflect.TypeFor[search.WebSearchResult]()})
	c.AddHandler(Handler{Name: "tools.WebSearch", Takes: reflect.TypeFor[search.WebSearch](),
		New: func(env Env) xmlpipe.Handler {
			return xmlpipe.Typed((&search.Tool{Policy: env.Tools, Callers: env.Callers}).Handle)
		}})
	c.AddTool(Tool{Name: search.Name, PayloadClass: "tools.WebSearch", Handler: "tools.WebSearch",
		Description: "Searches the web through the configured provider"})
	xt := func(env Env) *xmltools.Tool { return &xmltools.Tool{Policy: env.Tools, Callers: env.Callers} }
	c.AddPayload(Payload{Name: "tools.XMLToJSON", Type: reflect.TypeFor[xmltools.XMLToJSON](), Listener: xmltools.XMLToJSONName,
		Description: "Converts XML to JSON"})
	c.AddPayload(Payload{Name: "tools.XMLToJSONResult", Type: reflect.TypeFor[xmltools.XMLToJSONResult]()})
	c.AddHandler(Handler{Name: "tools.XMLToJSON", Takes: reflect.TypeFor[xmltools.XMLToJSON](),
		New: func(env Env) xmlpipe.Handler { return xmlpipe.Typed(xt(env).XMLToJSON) }})
	c.AddTool(Tool{Name: xmltools.XMLToJSONName, PayloadClass: "tools.XMLToJSON", Handler: "tools.XMLToJSON",
		Description: "Converts XML to JSON"})
	c.AddPayload(Payload{Name: "tools.JSONToXML", Type: reflect.TypeFor[xmltools.JSONToXML](), Listener: xmltools.JSONToXMLName,
		Description: "Converts JSON to XML"})
	c.AddPayload(Payload{Name: "tools.JSONToXMLResult", Type: reflect.TypeFor[xmltools.JSONToXMLResult]()})
	c.AddHandler(Handler{Name: "tools.JSONToXML", Takes: reflect.TypeFor[xmltools.JSONToXML](),
		New: func(env Env) xmlpipe.Handler { return xmlpipe.Typed(xt(env).JSONToXML) }})
	c.AddTool(Tool{Name: xmltools.JSONToXMLName, PayloadClass: "tools.JSONToXML", Handler: "tools.JSONToXML",
		Description: "Converts JSON to XML"})
	c.AddPayload(Payload{Name: "tools.XMLExtract", Type: reflect.TypeFor[xmltools.XMLExtract](), Listener: xmltools.ExtractName,
		Description: "Evaluates an XPath 1.0 expression on an XML document"})
	c.AddPayload(Payload{Name: "tools.XMLExtractResult", Type: reflect.TypeFor[xmltools.XMLExtractResult]()})
	c.AddHandler(Handler{Name: "tools.XMLExtract", Takes: reflect.TypeFor[xmltools.XMLExtract](),
		New: func(env Env) xmlpipe.Handler { return xmlpipe.Typed(xt(env).Extract) }})
	c.AddTool(Tool{Name: xmltools.ExtractName, PayloadClass: "tools.XMLExtract", Handler: "tools.XMLExtract",
		Description: "Evaluates an XPath 1.0 expression on an XML document"})
	c.AddPayload(Payload{Name: "tools.Librarian", Type: reflect.TypeFor[librarian.Librarian](), Listener: librarian.Name,
		Description: "Stores, gets, queries and searches XML documents"})
	c.AddPayload(Payload{Name: "tools.LibrarianResult", Type: reflect.TypeFor[librarian.LibrarianResult]()})
	c.AddHandler(Handler{Name: "tools.Librarian", Takes: reflect.TypeFor[librarian.Librarian](), New: newLibrarian})
	c.AddTool(Tool{Name: librarian.Name, PayloadClass: "tools.Librarian", Handler: "tools.Librarian",
		Description: "Stores, gets, queries and searches XML documents"})
}

// newKeyValue opens the key_value store (closed at shutdown). A store that
// cannot be opened makes every call fail with the reason.
func newKeyValue(env Env) xmlpipe.Handler {
	s, err := kv.Open(env.DataDir, nil)
	if err != nil {
		return unavailable(env, "key_value", err)
	}
	if env.AtShutdown != nil {
		env.AtShutdown(s.Close)
	}
	return xmlpipe.Typed((&kv.Tool{Store: s, Policy: env.Tools, Callers: env.Callers}).Handle)
}

// newLibrarian opens the embedded document store (closed at shutdown); a
// store that cannot be opened makes every call fail with the reason.
func newLibrarian(env Env) xmlpipe.Handler {
	e, err := librarian.OpenEmbedded(env.DataDir)
	if err != nil {
		return unavailable(env, "librarian", err)
	}
	if env.AtShutdown != nil {
		env.AtShutdown(e.Close)
	}
	return xmlpipe.Typed((&librarian.Tool{Embedded: e, Policy: env.Tools, Callers: env.Callers}).Handle)
}

// unavailable is the handler of a tool whose store could not be opened.
func unavailable(env Env, tool string, err error) xmlpipe.Handler {
	log := env.Logger
	if log == nil {
		log = slog.Default()
	}
	log.Error(tool+": store unavailable", "error", err)
	return xmlpipe.HandlerFunc(func(context.Context, any, xmlpipe.Metadata) (xmlpipe.Response, error) {
		return nil, err
	})
}
