package catalog

import (
	"reflect"

	"github.com/xml-pipeline/xmlpipe/listeners/hello"
	"github.com/xml-pipeline/xmlpipe/listeners/system"
	"github.com/xml-pipeline/xmlpipe/schemas"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// Builtin returns the catalog of every compiled-in listener.
func Builtin() *Catalog {
	c := New()
	c.AddPayload(Payload{Name: "hello.Greeting", Type: reflect.TypeFor[hello.Greeting](),
		Listener: "greeter", Description: "Greeting agent - forwards to shouter"}, "handlers.hello.Greeting", "handlers.console.Greeting")
	c.AddPayload(Payload{Name: "hello.GreetingResponse", Type: reflect.TypeFor[hello.GreetingResponse](),
		Listener: "shouter", Description: "Shouts the greeting in ALL CAPS"}, "handlers.hello.GreetingResponse")
	c.AddPayload(Payload{Name: "hello.ShoutedResponse", Type: reflect.TypeFor[hello.ShoutedResponse](),
		Listener: "response-handler", Description: "Prints responses to console"}, "handlers.hello.ShoutedResponse",
		"handlers.console.ShoutedResponse")
	c.AddPayload(Payload{Name: "system.Boot", Type: reflect.TypeFor[system.Boot](), Schema: schemas.System()},
		"agentserver.primitives.boot.Boot")
	c.AddPayload(Payload{Name: "system.TodoUntil", Type: reflect.TypeFor[system.TodoUntil](),
		Listener: "system.todo", Description: "Registers a todo watcher on the sender's thread"},
		"agentserver.primitives.todo.TodoUntil")
	c.AddPayload(Payload{Name: "system.TodoComplete", Type: reflect.TypeFor[system.TodoComplete](),
		Listener: "system.todo-complete", Description: "Closes a todo watcher"},
		"agentserver.primitives.todo.TodoComplete")
	c.AddPayload(Payload{Name: "system.TodoRegistered", Type: reflect.TypeFor[system.TodoRegistered]()},
		"agentserver.primitives.todo.TodoRegistered")
	c.AddPayload(Payload{Name: "system.TodoClosed", Type: reflect.TypeFor[system.TodoClosed]()},
		"agentserver.primitives.todo.TodoClosed")

	c.AddHandler(Handler{Name: "hello.Greeter", Takes: reflect.TypeFor[hello.Greeting](),
		New: func(env Env) xmlpipe.Handler {
			g := &hello.Greeter{LLM: env.LLM}
			if env.Todos != nil {
				g.Todos = todoAdapter{env}
			}
			return xmlpipe.Typed(g.Handle)
		}}, "handlers.hello.handle_greeting")
	c.AddHandler(Handler{Name: "hello.Shout", Takes: reflect.TypeFor[hello.GreetingResponse](),
		New: func(Env) xmlpipe.Handler { return xmlpipe.Typed(hello.Shout) }}, "handlers.hello.handle_shout")
	c.AddHandler(Handler{Name: "hello.Printer", Takes: reflect.TypeFor[hello.ShoutedResponse](),
		New: func(env Env) xmlpipe.Handler {
			pr := &hello.Printer{Print: env.Print}
			return xmlpipe.Typed(pr.Handle)
		}}, "handlers.hello.handle_response_print",
		// The reference's older console handler prints "[shouter] …" too.
		"handlers.console.handle_shouted_response")
	c.AddHandler(Handler{Name: "system.Boot", Takes: reflect.TypeFor[system.Boot](),
		New: func(env Env) xmlpipe.Handler {
			return xmlpipe.Typed((&system.BootHandler{Logger: env.Logger}).Handle)
		}}, "agentserver.primitives.boot.handle_boot")
	c.AddHandler(Handler{Name: "system.TodoUntil", Takes: reflect.TypeFor[system.TodoUntil](),
		New: func(env Env) xmlpipe.Handler {
			return xmlpipe.Typed((&system.Todo{Registry: env.Todos, Lineage: env.Lineage, Logger: env.Logger}).Until)
		}}, "agentserver.primitives.todo.handle_todo_until")
	c.AddHandler(Handler{Name: "system.TodoComplete", Takes: reflect.TypeFor[system.TodoComplete](),
		New: func(env Env) xmlpipe.Handler {
			return xmlpipe.Typed((&system.Todo{Registry: env.Todos, Lineage: env.Lineage, Logger: env.Logger}).Complete)
		}}, "agentserver.primitives.todo.handle_todo_complete")
	addTools(c)
	return c
}

// todoAdapter gives the greeter the registry operations it needs.
type todoAdapter struct{ env Env }

func (a todoAdapter) Register(thread, issuer, waitFor, fromListener, description string) string {
	return a.env.Todos.Register(thread, issuer, waitFor, fromListener, description)
}

func (a todoAdapter) CloseRaised(thread, agent string) int {
	n := 0
	for _, w := range a.env.Todos.RaisedFor(thread, agent) {
		if a.env.Todos.Close(w.ID) {
			n++
		}
	}
	return n
}
