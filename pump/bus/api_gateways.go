package bus

import (
	"net/http"
	"slices"
)

// apiGatewayBody is one federation gateway as GET /api/v1/gateways reports
// it.
type apiGatewayBody struct {
	Name string `json:"name"`
	// Connected reports a live, authenticated link; Peer names the peer
	// organism then ("" otherwise).
	Connected bool   `json:"connected"`
	Peer      string `json:"peer"`
	// Queued is how many envelopes wait for the peer's acknowledgement;
	// OpenCalls how many calls wait for the peer's answer.
	Queued    int `json:"queued"`
	OpenCalls int `json:"open_calls"`
	// Imports are the local listeners standing for the peer's
	// capabilities; Exports the root tags the peer may call here.
	Imports []string `json:"imports"`
	Exports []string `json:"exports"`
	// LastError says why the link is down while it is (the peer
	// unreachable, the handshake refused, how the last link ended).
	LastError string `json:"last_error,omitempty"`
}

// apiGateways is GET /api/v1/gateways: the organism's federation gateways
// and their links (an empty list without gateways).
func (s *Server) apiGateways(w http.ResponseWriter, r *http.Request) {
	sess := sessionOf(r.Context())
	out := []apiGatewayBody{}
	if fm := s.opts.Organism.Federation; fm != nil {
		for _, g := range fm.Status() {
			b := apiGatewayBody{Name: g.Name, Connected: g.Connected, Peer: g.Peer, Queued: g.Queued, OpenCalls: g.Open,
				Imports: slices.Sorted(slices.Values(g.Imports)), Exports: append([]string{}, g.Exports...), LastError: g.LastError}
			if b.Imports == nil {
				b.Imports = []string{}
			}
			if sess.Profile != "" {
				// A user with a profile sees a gateway only through the imports
				// the profile reaches; its queues, calls and exports are the
				// whole organism's and are not shown.
				b.Imports = slices.DeleteFunc(b.Imports, func(n string) bool { return !s.visible(sess, n) })
				if len(b.Imports) == 0 {
					continue
				}
				b.Queued, b.OpenCalls, b.Exports, b.LastError = 0, 0, []string{}, ""
			}
			out = append(out, b)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"gateways": out})
}
