package oob

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// MaxStoredListeners caps the listeners Target.ListenerFile keeps: a
// register-listener beyond it is removed again and answered INTERNAL,
// saying why.
const MaxStoredListeners = 1000

// ReadListeners reads the register-listener requests stored in path, in
// the order they were registered (none when the file does not exist).
func ReadListeners(path string) ([]RegisterListener, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ls []RegisterListener
	if err := json.Unmarshal(b, &ls); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ls, nil
}

// ListenerConfig is the listener a register-listener request describes
// (a catalog listener, or by the class convention a WASM listener or a
// YAML agent), as the channel registers it: what a caller re-registering
// the stored requests at start (ReadListeners) hands the organism.
func ListenerConfig(a RegisterListener) (config.Listener, error) { return listenerConfig(&a) }

// writeListeners replaces the file at path with ls, atomically and
// durably (a temporary file synced, renamed, the directory synced), mode
// 0600.
func writeListeners(path string, ls []RegisterListener) error {
	if ls == nil {
		ls = []RegisterListener{}
	}
	b, err := json.MarshalIndent(ls, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after the rename: nothing there
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// storeListener records a registered listener in Target.ListenerFile
// (replacing one of the same name); nothing to do without the file.
func (o *operations) storeListener(a RegisterListener) error {
	if o.t.ListenerFile == "" {
		return nil
	}
	o.lmu.Lock()
	defer o.lmu.Unlock()
	ls, err := ReadListeners(o.t.ListenerFile)
	if err != nil {
		return err
	}
	ls = slices.DeleteFunc(ls, func(x RegisterListener) bool { return strings.EqualFold(x.Name, a.Name) })
	if len(ls) >= MaxStoredListeners {
		return fmt.Errorf("%d listeners are stored already (at most %d)", len(ls), MaxStoredListeners)
	}
	return writeListeners(o.t.ListenerFile, append(ls, a))
}

// forgetListener drops name from Target.ListenerFile and reports whether
// it was there.
func (o *operations) forgetListener(name string) (bool, error) {
	if o.t.ListenerFile == "" {
		return false, nil
	}
	o.lmu.Lock()
	defer o.lmu.Unlock()
	ls, err := ReadListeners(o.t.ListenerFile)
	if err != nil {
		return false, err
	}
	n := len(ls)
	if ls = slices.DeleteFunc(ls, func(x RegisterListener) bool { return strings.EqualFold(x.Name, name) }); len(ls) == n {
		return false, nil
	}
	return true, writeListeners(o.t.ListenerFile, ls)
}

// storedClasses fills classes with the stored listeners' classes, so
// list-listeners shows them after a restart too.
func (o *operations) storedClasses() {
	if o.t.ListenerFile == "" {
		return
	}
	ls, err := ReadListeners(o.t.ListenerFile)
	if err != nil {
		o.s.log.Warn("stored listeners not read", "file", o.t.ListenerFile, "error", err)
		return
	}
	o.cmu.Lock()
	defer o.cmu.Unlock()
	for _, l := range ls {
		o.classes[lowerName(l.Name)] = l.Class
	}
}
