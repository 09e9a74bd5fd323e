package console

import (
	"errors"
	"strings"

	"github.com/xml-pipeline/xmlpipe/pump"
)

// notJournaledText is what the console says of a line whose message the
// organism took but could not journal (pump.ErrNotDurable: it was admitted
// just before its storage began to fail): it was handed on, and its answer
// may still come, but a restart will not deliver it again.
const notJournaledText = "Handed on but not journaled: the organism could not record this message (see its log: is its data directory's disk full?); " +
	"it may still be answered, but it will not survive a restart"

// storageRefusedText is what the console says of a line refused while the
// organism's storage cannot commit (pump.ErrCannotJournal): "The organism
// cannot journal messages now (disk full: …); nothing was done; retry
// later".
func storageRefusedText(err error) string {
	r, ok := errors.AsType[*pump.StorageRefusal](err)
	if !ok {
		return "The organism cannot journal messages now; nothing was done; retry later"
	}
	t := r.Text()
	return strings.ToUpper(t[:1]) + t[1:]
}
