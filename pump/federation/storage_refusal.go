package federation

import (
	"errors"
	"math"
	"strings"

	"github.com/xml-pipeline/xmlpipe/pump"
)

// RefusedStorage is the Observer reason of a call refused while this
// side's storage cannot commit (pump.ErrCannotJournal: a full disk).
const RefusedStorage = "storage"

// refuseStorage nacks call e, refused with err (a *pump.StorageRefusal)
// while this side's storage cannot commit: nothing of it was kept, so the
// nack is a busy one (ReasonBusy) — the peer's caller gets pump.ErrBusy
// with the retry hint and may make the call again — whose text says why.
// Logged through the link's refusals: a line a minute, not one a call.
func (g *gateway) refuseStorage(c *conn, e *envelope, err error) {
	text, retry := storageAnswer(err)
	c.refusedEnvelope(RefusedStorage, "federation: call from the peer refused: the storage cannot commit", "id", e.Link.ID,
		"root", e.PayloadName, "error", err)
	g.m.refusal(g.name, RefusedStorage)
	c.acks.send(frame{Type: frameNack, ID: e.Link.ID, Error: text, Reason: ReasonBusy, RetryAfter: retry})
}

// storageAnswer is the nack text and retry hint (whole seconds, at least
// 1) of a storage refusal: what the buses answer ("The organism cannot
// journal messages now (disk full: …); nothing was done; retry later").
func storageAnswer(err error) (text string, retryAfter int) {
	text, retryAfter = "The organism cannot journal messages now; nothing was done; retry later", 1
	if r, ok := errors.AsType[*pump.StorageRefusal](err); ok {
		t := r.Text()
		text = strings.ToUpper(t[:1]) + t[1:]
		retryAfter = max(1, int(math.Ceil(r.RetryAfter.Seconds())))
	}
	return text, retryAfter
}
