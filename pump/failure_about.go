package pump

import "strconv"

// beginHandling starts the numbering of a handling's outputs and failures
// (see about): each handling of d, a halted one's retry included, numbers
// them from the start, as a crash's re-handling does.
func (p *Pump) beginHandling(d *delivery) {
	d.told = 0
	switch {
	case d.mark != nil:
		d.handling = d.mark.seq
	default:
		d.handling = -p.unjournaledHandlings.Add(1)
	}
}

// about returns what tells apart a failure about d's handling's next
// output or failure, sent with correlation ref ref ("": none): the ref when
// it has one, else its place in the handling (Event.About). It is called
// on the worker running the handling, in the order of the handler's
// output.
func (d *delivery) about(ref string) string {
	if ref != "" {
		return "ref:" + ref
	}
	n := d.told
	d.told++
	var b [40]byte
	out := strconv.AppendInt(b[:0], d.handling, 10)
	out = append(out, '#')
	return string(strconv.AppendInt(out, int64(n), 10))
}
