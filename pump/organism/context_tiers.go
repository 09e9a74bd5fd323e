package organism

import (
	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// SegmentPut persists a context segment's tier and fold summary (the
// registry.SegmentSink of a durable organism).
func (k storeSinks) SegmentPut(s registry.Segment) {
	if k.segs != nil {
		k.segs.add(s.ThreadID)
	}
	k.check("put segment", k.s.PutSegment(store.SegmentRow{Thread: s.ThreadID, Index: s.Index, Slots: s.Slots,
		ContentType: s.ContentType, Tier: string(s.Tier), Relevance: s.Relevance, Scored: s.Scored, Summary: s.Summary,
		SummaryBy: s.SummaryBy, Bytes: s.Bytes, Tokens: s.Tokens, Changed: s.Changed}))
}

// restoreSegments loads the persisted context segments beside the restored
// slots; a segment whose slots are gone is dropped, and deleted from the
// store. It returns the threads with segments in the store
// (segmentThreads), for k.segs.
func (k *storeSinks) restoreSegments(cb *registry.ContextBuffer) (*segmentThreads, error) {
	rows, err := k.s.LoadSegments()
	if err != nil {
		return nil, err
	}
	segs := &segmentThreads{m: map[string]struct{}{}}
	for _, r := range rows {
		if _, ok := segs.m[r.Thread]; ok {
			continue
		}
		if cb.ThreadExists(r.Thread) {
			segs.m[r.Thread] = struct{}{}
		} else if err := k.s.DeleteSegments(r.Thread); err != nil {
			return nil, err
		}
	}
	restored := make([]registry.Segment, len(rows))
	for i, r := range rows {
		restored[i] = registry.Segment{ThreadID: r.Thread, Index: r.Index, Slots: r.Slots, ContentType: r.ContentType,
			Tier: registry.Tier(r.Tier), Relevance: r.Relevance, Scored: r.Scored, Summary: r.Summary,
			SummaryBy: r.SummaryBy, Bytes: r.Bytes, Tokens: r.Tokens, Changed: r.Changed}
	}
	if skipped := cb.RestoreSegments(restored); skipped > 0 {
		k.log.Warn("context segments without their slots were not restored", "segments", skipped)
	}
	return segs, nil
}

var _ registry.SegmentSink = storeSinks{}

// ThreadContext returns the context history of thread id — what its agents
// see of it, as segments with their tiers (registry.ThreadContext.Segments)
// — and false when the thread has none.
func (o *Organism) ThreadContext(id string) (*registry.ThreadContext, bool) {
	if o.history == nil {
		return nil, false
	}
	return o.history.Thread(id)
}
