package main

import (
	"log/slog"
	"path/filepath"

	"github.com/xml-pipeline/xmlpipe/oob"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// listenerStore is the file, in the data directory, where the OOB
// channel's register-listener stores the listeners it adds.
const listenerStore = "oob-listeners.json"

// restoreListeners registers again, in the assembled organism (before it
// starts), the listeners register-listener stored in data. One that
// cannot be registered any more (its module is gone, its name is now
// organism.yaml's, …) is logged and skipped; it stays stored, so
// unregister-listener can forget it. The organism starts either way.
func restoreListeners(o *organism.Organism, data string, log *slog.Logger) {
	path := filepath.Join(data, listenerStore)
	stored, err := oob.ReadListeners(path)
	if err != nil {
		log.Warn("stored listeners not read", "file", path, "error", err)
		return
	}
	for _, s := range stored {
		lc, err := oob.ListenerConfig(s)
		if err == nil {
			err = o.AddListener(lc)
		}
		if err != nil {
			log.Warn("stored listener skipped", "file", path, "listener", s.Name, "class", s.Class, "error", err)
			continue
		}
		log.Info("stored listener registered", "listener", s.Name, "class", s.Class)
	}
}
