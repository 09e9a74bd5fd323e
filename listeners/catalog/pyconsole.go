package catalog

import (
	"errors"
	"fmt"
	"strings"
)

// ErrBuiltinConsole is returned for the payloads and handlers of the Python
// reference's message-driven console (handlers/console.py): xmlpipe's
// console is a command, not a listener in the message flow.
var ErrBuiltinConsole = errors.New("the Python message-driven console is built into xmlpipe")

// pythonConsole are the names of handlers/console.py that no listener
// stands for. Its Greeting, ShoutedResponse and handle_shouted_response are
// aliases of the hello listeners (Builtin).
var pythonConsole = map[string]bool{
	"handlers.console.ConsolePrompt":         true,
	"handlers.console.ConsoleInput":          true,
	"handlers.console.handle_console_prompt": true,
	"handlers.console.handle_console_input":  true,
}

// consoleError returns ErrBuiltinConsole, saying what to do instead, when
// name is one of pythonConsole (in the dotted or the colon form), else nil.
func consoleError(name string) error {
	if !pythonConsole[strings.Replace(strings.TrimSpace(name), ":", ".", 1)] {
		return nil
	}
	return fmt.Errorf("%w: %q: xmlpipe console (in process, or console --connect to a running organism) reads the lines and routes @listener messages itself; remove this listener", ErrBuiltinConsole, name)
}

// pythonAdvice is what an unknown name is told to do instead when it reads
// as a Python import path — a module path and a name, "pkg.mod.Class" or
// "pkg.mod:attr" (catalog names have one dot: "hello.Greeting") — else "".
func pythonAdvice(name string) string {
	name = strings.TrimSpace(name)
	if strings.Count(name, ".") < 2 && !strings.Contains(name, ":") {
		return ""
	}
	return "; xmlpipe runs no Python: write the listener in Go and register it in the catalog " +
		"(README \"Writing a listener\"), or run it as a WebAssembly module (type: wasm) or an MCP server (type: mcp)"
}
