package pump

import "runtime"

// turn gathers what the outputs of one handler call journal while they pass
// the ingress stages, so that the records are journaled as one group
// (GroupJournal: after a crash the journal holds all of them or none), and
// everything that follows from them — hand-offs to listeners, events,
// errors back to the sender, the accounting of each output — happens once
// they are, in the order it was asked for. Only the handler's worker uses
// it.
type turn struct {
	steps   []turnStep
	records int
}

// turnStep is one record to journal (has) and what follows it, or only
// something to do (then).
type turnStep struct {
	rec  Record
	has  bool
	then func(seq int64)
	// settle, when set, is work whose ingress stages are done: settled
	// (settleWork) after then. A field, not a closure: one per hop.
	settle *work
}

// newTurn returns a turn for a handler call's outputs, or nil when the
// journal cannot group records: each output is then journaled on its own as
// it passes the ingress stages.
func (p *Pump) newTurn() *turn {
	if _, ok := p.journal.(GroupJournal); !ok {
		return nil
	}
	return &turn{}
}

// journalIn journals r and then calls then (when set) with its seq (0: not
// journaled): at once without a turn, with the turn's group otherwise.
func (p *Pump) journalIn(t *turn, r Record, then func(seq int64)) {
	if t == nil {
		if then == nil {
			p.record(r)
			return
		}
		then(p.recordSeq(r))
		return
	}
	if r.Time.IsZero() {
		r.Time = p.opts.Clock()
	}
	p.recordProfile(&r)
	t.steps = append(t.steps, turnStep{rec: r, has: true, then: then})
	t.records++
}

// later runs fn at once without a turn, else once the turn's group is
// journaled.
func (p *Pump) later(t *turn, fn func()) {
	if t == nil {
		fn()
		return
	}
	t.steps = append(t.steps, turnStep{then: func(int64) { fn() }})
}

// settleLater settles w (settleWork) at once without a turn, else once
// the turn's group is journaled: process defers it, so it comes after
// everything w's stages asked for.
func (p *Pump) settleLater(t *turn, w *work) {
	if t == nil {
		p.settleWork(w)
		return
	}
	t.steps = append(t.steps, turnStep{settle: w})
}

// settleWork accounts for work whose ingress stages are done, in this
// order: internal work's conversation is done with it, the delivery that
// emitted it and the hand-offs waiting on its journal record lose a
// reference, and it leaves the work in flight.
func (p *Pump) settleWork(w *work) {
	if !w.external {
		p.convDone(w.conv)
	}
	w.parent.release()
	w.after.release()
	p.releaseWork(w)
}

// runTurn runs the ingress stages of a delivery's outputs one after the
// other under one ingress slot, gathering what they journal in t, then
// journals it as one group and carries out the rest (commitTurn). A
// handler's worker never waits for a slot (a slot's holder may be waiting
// for room in this very listener's queue): with none free, the turn goes
// to the ingress workers as one piece of work.
func (p *Pump) runTurn(d *delivery, t *turn) {
	outs := d.outputs
	d.outputs = nil
	select {
	case p.ingressSlots <- struct{}{}:
		p.turnStages(outs, t)
		<-p.ingressSlots
		p.finishTurn(outs, t)
	default:
		if !p.work.push(&work{turn: t, batch: outs}) {
			for _, w := range outs {
				w.turn = nil
				p.queueFailed(w)
			}
		}
	}
}

// turnStages runs the ingress stages of a turn's outputs; the caller holds
// an ingress slot.
func (p *Pump) turnStages(outs []*work, t *turn) {
	for _, w := range outs {
		w.turn = t
		p.process(w)
	}
}

// finishTurn journals the turn and hands its outputs on, then lets a
// listener worker it woke run.
func (p *Pump) finishTurn(outs []*work, t *turn) {
	p.commitTurn(t)
	woke := false
	for i, w := range outs {
		woke = woke || w.wokeWorker.Load()
		outs[i] = nil
	}
	if woke {
		runtime.Gosched() // as yieldToWoken: let a woken listener worker run now
	}
}

// commitTurn journals t's records as one group and then runs its steps in
// order, each with its record's seq.
func (p *Pump) commitTurn(t *turn) {
	var seqs []int64
	if t.records > 0 {
		rs := make([]Record, 0, t.records)
		for i := range t.steps {
			if t.steps[i].has {
				rs = append(rs, t.steps[i].rec)
			}
		}
		seqs = p.journal.(GroupJournal).RecordGroup(rs)
	}
	k := 0
	for i := range t.steps {
		s := &t.steps[i]
		var seq int64
		if s.has {
			if k < len(seqs) {
				seq = seqs[k]
			}
			k++
		}
		if s.then != nil {
			s.then(seq)
		}
		if s.settle != nil {
			p.settleWork(s.settle)
		}
		t.steps[i] = turnStep{}
	}
	t.steps, t.records = nil, 0
}
