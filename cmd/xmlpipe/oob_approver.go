package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/xml-pipeline/xmlpipe/oob"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// oobApprover lists and decides the organism's approvals for the OOB
// channel (oob.Approver) — its owner's, as an admin's: every kind,
// memory consent included.
type oobApprover struct {
	g *organism.Governance
}

// Approvals implements oob.Approver.
func (a oobApprover) Approvals(ctx context.Context, q oob.ApprovalQuery) ([]oob.Approval, error) {
	if q.After != "" {
		// The organism lists none after an unknown id: say it is unknown.
		if _, err := a.g.Approval(ctx, q.After); errors.Is(err, organism.ErrApprovalNotFound) {
			return nil, fmt.Errorf("%w: %s", oob.ErrApprovalNotFound, q.After)
		} else if err != nil {
			return nil, err
		}
	}
	as, err := a.g.Approvals(ctx, organism.ApprovalFilter{Status: q.Status, Thread: q.Thread, Limit: q.Limit, After: q.After})
	if err != nil {
		return nil, err
	}
	out := make([]oob.Approval, len(as))
	for i, x := range as {
		out[i] = oobApproval(x)
	}
	return out, nil
}

// Decide implements oob.Approver.
func (a oobApprover) Decide(ctx context.Context, id string, approve bool, by, reason string) (oob.Approval, error) {
	x, err := a.g.Decide(ctx, id, approve, by, reason)
	switch {
	case errors.Is(err, organism.ErrApprovalNotFound):
		return oob.Approval{}, fmt.Errorf("%w: %s", oob.ErrApprovalNotFound, id)
	case errors.Is(err, organism.ErrApprovalDecided):
		return oob.Approval{}, &oob.DecidedError{Message: err.Error()}
	case err != nil:
		return oob.Approval{}, err
	}
	return oobApproval(x), nil
}

// oobApproval is x as the channel answers it.
func oobApproval(x organism.Approval) oob.Approval {
	a := oob.Approval{ID: x.ID, Kind: x.Kind, Status: x.Status, Agent: x.Agent, Target: x.Target, ThreadID: x.Conversation,
		User: x.User, RequestReason: x.RequestReason, Envelope: x.Payload, CreatedAt: x.CreatedAt, ExpiresAt: x.ExpiresAt,
		DecidedBy: x.DecidedBy, Reason: x.Reason}
	if !x.DecidedAt.IsZero() {
		a.DecidedAt = &x.DecidedAt
	}
	return a
}
