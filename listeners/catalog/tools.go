package catalog

import (
	"cmp"
	"context"
	"log/slog"
	"reflect"
	"sync"

	"github.com/xml-pipeline/xmlpipe/listeners/tools"
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

// nativeTool is one native tool's catalog entries: its listener name, its
// payload class ("tools.X", whose result payload is "tools.XResult" and
// whose handler has the same name), the request and result types, its
// description and how its handler is built.
type nativeTool struct {
	name, class, description string
	takes, result            reflect.Type
	build                    HandlerFactory
}

// toolChecks are the load-time checks of the tools whose tool_config can be
// wrong in ways only the tool knows.
var toolChecks = map[string]func(tools.Config) error{
	files.Name:   files.Check,
	command.Name: command.Check,
	kv.Name:      kv.Check,
}

// addTools registers the native tools: for each, its request and result
// payloads, its handler and its tool entry.
func addTools(c *Catalog) {
	xt := func(env Env) *xmltools.Tool { return &xmltools.Tool{Policy: env.Tools, Callers: env.Callers} }
	for _, t := range []nativeTool{
		{calculate.Name, "tools.Calculate", "Evaluates an arithmetic expression",
			reflect.TypeFor[calculate.Calculate](), reflect.TypeFor[calculate.CalculateResult](),
			func(env Env) xmlpipe.Handler {
				return xmlpipe.Typed((&calculate.Tool{Policy: env.Tools, Callers: env.Callers}).Handle)
			}},
		{files.Name, "tools.Files", "Reads, writes, lists and deletes files inside the configured roots",
			reflect.TypeFor[files.Files](), reflect.TypeFor[files.FilesResult](),
			newFiles},
		{command.Name, "tools.RunCommand", "Runs an allowed program without a shell",
			reflect.TypeFor[command.RunCommand](), reflect.TypeFor[command.RunCommandResult](),
			newRunCommand},
		{fetch.Name, "tools.Fetch", "Fetches an http(s) URL on a public host",
			reflect.TypeFor[fetch.Fetch](), reflect.TypeFor[fetch.FetchResult](),
			func(env Env) xmlpipe.Handler {
				return xmlpipe.Typed((&fetch.Tool{Policy: env.Tools, Callers: env.Callers}).Handle)
			}},
		{kv.Name, "tools.KeyValue", "Gets, sets and deletes values, per thread or in a named namespace, with expiry",
			reflect.TypeFor[kv.KeyValue](), reflect.TypeFor[kv.KeyValueResult](), newKeyValue},
		{search.Name, "tools.WebSearch", "Searches the web through the configured provider",
			reflect.TypeFor[search.WebSearch](), reflect.TypeFor[search.WebSearchResult](),
			func(env Env) xmlpipe.Handler {
				return xmlpipe.Typed((&search.Tool{Policy: env.Tools, Callers: env.Callers}).Handle)
			}},
		{xmltools.XMLToJSONName, "tools.XMLToJSON", "Converts XML to JSON",
			reflect.TypeFor[xmltools.XMLToJSON](), reflect.TypeFor[xmltools.XMLToJSONResult](),
			func(env Env) xmlpipe.Handler { return xmlpipe.Typed(xt(env).XMLToJSON) }},
		{xmltools.JSONToXMLName, "tools.JSONToXML", "Converts JSON to XML",
			reflect.TypeFor[xmltools.JSONToXML](), reflect.TypeFor[xmltools.JSONToXMLResult](),
			func(env Env) xmlpipe.Handler { return xmlpipe.Typed(xt(env).JSONToXML) }},
		{xmltools.ExtractName, "tools.XMLExtract", "Evaluates an XPath 1.0 expression on an XML document",
			reflect.TypeFor[xmltools.XMLExtract](), reflect.TypeFor[xmltools.XMLExtractResult](),
			func(env Env) xmlpipe.Handler { return xmlpipe.Typed(xt(env).Extract) }},
		{librarian.Name, "tools.Librarian", "Stores, gets, queries and searches XML documents",
			reflect.TypeFor[librarian.Librarian](), reflect.TypeFor[librarian.LibrarianResult](), newLibrarian},
	} {
		c.AddPayload(Payload{Name: t.class, Type: t.takes, Listener: t.name, Description: t.description})
		c.AddPayload(Payload{Name: t.class + "Result", Type: t.result})
		c.AddHandler(Handler{Name: t.class, Takes: t.takes, Gives: t.result, New: t.build})
		c.AddTool(Tool{Name: t.name, PayloadClass: t.class, Handler: t.class, Description: t.description, Check: toolChecks[t.name]})
	}
}

// newFiles builds the files listener; at shutdown it ends the disk caps
// it declared on its roots.
func newFiles(env Env) xmlpipe.Handler {
	t := &files.Tool{Policy: env.Tools, Callers: env.Callers}
	if env.AtShutdown != nil {
		env.AtShutdown(t.Close)
	}
	return xmlpipe.Typed(t.Handle)
}

// newKeyValue gives the listener its organism's key_value store
// (Env.Stores: one per data directory, shared by every key_value listener
// of the organism, with one sweeper of expired conversation namespaces
// every kv.SweepEvery), released at shutdown. Without Stores (a handler
// built outside an organism) it opens a store of its own, swept and closed
// at shutdown when there is one. A store that cannot be opened makes every
// call fail with the reason.
func newKeyValue(env Env) xmlpipe.Handler {
	stores := env.Stores
	if stores == nil || env.AtShutdown == nil {
		stores = NewStores() // the listener's own
	}
	s, release, err := stores.keyValue(env.DataDir, env.Logger, env.AtShutdown != nil)
	if err != nil {
		return unavailable(env, "key_value", err)
	}
	if env.AtShutdown != nil {
		env.AtShutdown(release)
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

// newRunCommand is the run_command handler; building it removes the
// working directories organisms killed during a call left behind
// (command.SweepStale), once a process.
func newRunCommand(env Env) xmlpipe.Handler {
	sweepRunDirs.Do(func() {
		log := cmp.Or(env.Logger, slog.Default())
		n, err := command.SweepStale()
		if err != nil {
			log.Warn("run_command: stale working directories not all removed", "removed", n, "error", err)
		} else if n > 0 {
			log.Info("run_command: removed the working directories of organisms killed during a call", "removed", n)
		}
	})
	return xmlpipe.Typed((&command.Tool{Policy: env.Tools, Callers: env.Callers}).Handle)
}

// sweepRunDirs sweeps once a process.
var sweepRunDirs sync.Once
