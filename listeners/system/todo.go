package system

import (
	"context"
	"log/slog"

	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// TodoUntil asks the organism to watch the sender's thread for a payload.
type TodoUntil struct {
	WaitFor      string
	FromListener string
	Description  string
}

// TodoComplete closes a watcher.
type TodoComplete struct {
	Id string
}

// TodoRegistered acknowledges a TodoUntil.
type TodoRegistered struct {
	Id          string
	WaitFor     string
	Description string
}

// TodoClosed acknowledges a TodoComplete.
type TodoClosed struct {
	Id        string
	WasRaised bool
}

// Todo implements system.todo and system.todo-complete over the todo registry.
// The TodoUntil arrives on a thread extended from the sender's; the watcher is
// registered on the sender's own thread (the parent), and because watchers see
// every thread descended from theirs, replies to the sender's later messages
// raise it (reference quirk Q21 fixed). Acknowledgements go back with Respond,
// so they reach the sender on its own thread.
type Todo struct {
	Registry *registry.TodoRegistry
	// Lineage finds the sender's thread (the parent of the one the request came on).
	Lineage registry.Lineage
	Logger  *slog.Logger
}

// Until handles TodoUntil.
func (t *Todo) Until(_ context.Context, p *TodoUntil, md xmlpipe.Metadata) (xmlpipe.Response, error) {
	thread := md.ThreadID
	if t.Lineage != nil {
		if anc := t.Lineage.Ancestors(thread); len(anc) > 1 {
			thread = anc[1]
		}
	}
	id := t.Registry.Register(thread, md.From, p.WaitFor, p.FromListener, p.Description)
	return xmlpipe.Respond(&TodoRegistered{Id: id, WaitFor: p.WaitFor, Description: p.Description}), nil
}

// Complete handles TodoComplete.
func (t *Todo) Complete(_ context.Context, p *TodoComplete, md xmlpipe.Metadata) (xmlpipe.Response, error) {
	w, ok := t.Registry.Get(p.Id)
	if !ok || !t.Registry.Close(p.Id) {
		log := t.Logger
		if log == nil {
			log = slog.Default()
		}
		log.Warn("todo-complete for an unknown watcher", "id", p.Id, "from", md.From, "thread", md.ThreadID)
		return nil, nil
	}
	return xmlpipe.Respond(&TodoClosed{Id: p.Id, WasRaised: w.Raised}), nil
}
