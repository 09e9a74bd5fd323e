package bus

import (
	"context"
	"fmt"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// A constitution review rule holds a message for a human's judgement: the
// constitution (seed 003: human stewards decide; the guardian must not
// approve or overlook a violation) asks for oversight of what the rule
// caught, and the user whose request it serves is the one party who
// cannot give it. So the user who began the conversation a review
// approval waits in may deny it, never approve it — another operator or an
// admin does (four eyes) — unless nobody else has the operator role or
// above: then they alone can decide, or the message could only expire.
// The organism's owner (OOB, the in-process console) is no bus user and
// decides any. A tool approval (the listener's approval: list) is a human
// in the loop of what the agent does on the user's behalf, and the user
// confirms it themselves; a memory approval is the user's own consent.

// userLister lists the bus's users (*auth.Service does).
type userLister interface {
	Users(ctx context.Context) ([]auth.UserInfo, error)
}

// ownReview reports why user may not approve a, or "" when they may: a
// review approval in user's own conversation while another user has the
// operator role or above.
func (s *Server) ownReview(ctx context.Context, user string, a organism.Approval) (string, error) {
	if s.opts.Insecure || a.Kind != organism.KindReview || a.User == "" || a.User != user {
		return "", nil
	}
	ul, ok := s.opts.Auth.(userLister)
	if !ok {
		return "", nil // no users to tell apart
	}
	us, err := ul.Users(ctx)
	if err != nil {
		return "", err
	}
	for _, u := range us {
		if u.Name != user && u.Role.Allows(auth.Operator) {
			return fmt.Sprintf("Approval %s holds a message of %s's own conversation that a review rule sent to a human: "+
				"four eyes — another operator or an admin approves it (%s may deny it)", a.ID, user, user), nil
		}
	}
	return "", nil
}
