// Package system holds the organism's own listeners: system.boot, system.todo
// and system.todo-complete.
package system

import (
	"context"
	"encoding/xml"
	"log/slog"
	"time"

	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// Boot is the boot message of system-msg.xsd, sent once when the organism starts.
type Boot struct {
	XMLName       xml.Name  `xml:"https://xml-pipeline.org/system boot"`
	OrganismName  string    `xml:"organism-name"`
	Timestamp     time.Time `xml:"timestamp"`
	ListenerCount uint      `xml:"listener-count"`
}

// BootHandler logs the boot and ends the chain (handle_boot).
type BootHandler struct {
	Logger *slog.Logger
	// Root receives the boot thread id (optional).
	Booted func(b *Boot, thread string)
}

// Handle implements the system.boot listener.
func (h *BootHandler) Handle(_ context.Context, b *Boot, md xmlpipe.Metadata) (xmlpipe.Response, error) {
	log := h.Logger
	if log == nil {
		log = slog.Default()
	}
	log.Info("organism booted", "organism", b.OrganismName, "at", b.Timestamp.Format(time.RFC3339Nano),
		"listeners", b.ListenerCount, "thread", md.ThreadID)
	if h.Booted != nil {
		h.Booted(b, md.ThreadID)
	}
	return nil, nil
}
