package bus

import (
	"time"

	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// apiStoreBody is the Organism model's "store": whether the durable
// store's commits succeed ("ok"), or since when and why they fail
// ("failing": a full disk, an I/O error; journal appends are refused
// meanwhile), as get-status's <store> says.
type apiStoreBody struct {
	State      string `json:"state"`
	Error      string `json:"error,omitempty"`
	Since      string `json:"since,omitempty"`
	HeldWrites int    `json:"held_writes,omitempty"`
}

// storeBodyOf is the "store" of the health h.
func storeBodyOf(h store.Health) *apiStoreBody {
	if h.OK {
		return &apiStoreBody{State: "ok"}
	}
	return &apiStoreBody{State: "failing", Error: h.Error, Since: h.Since.UTC().Format(time.RFC3339), HeldWrites: h.Held}
}
