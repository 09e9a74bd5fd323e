package bus

import "github.com/xml-pipeline/xmlpipe/pump/bus/auth"

// visible reports whether the listener called name exists for sess: a
// user with a security profile (auth.Session.Profile) sees only the
// listeners the profile reaches — the others are answered exactly as
// listeners that do not exist, in listings, lookups and sends alike.
func (s *Server) visible(sess auth.Session, name string) bool {
	return sess.Profile == "" || s.pump.ProfileReaches(sess.Profile, name)
}
