package llm

import (
	"math"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// The librarian scores a segment's relevance to the agent's current task
// lexically, with TF-IDF in the classic SMART lnc.ltc form: a segment's
// vector is its terms' 1 + ln tf, length-normalised; the task's (the
// message that opened the turn and the latest segment) is 1 + ln tf times
// idf over the conversation's segments, length-normalised; the score is
// their dot product, 0 to 1. A segment's vector depends on its text alone,
// so it is computed once and cached (lexicon): a curation costs a pass over
// the cached vectors. It is cheap, deterministic and needs no model — the
// librarian runs before every model call. (listeners/route has a richer
// TF-IDF, but it builds on this package, so it cannot serve here.)

// stopWords are left out of the terms: they say nothing about a topic.
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an and are as at be been but by can could did do does for from had has have
		he her hers him his how i if in into is it its me my no not of on or our ours she so than that the their them
		then there these they this those to too us was we were what when where which who whom why will with would you
		your yours about after again all also am any because before being both each few further here just more most
		other over own same should some such through under until up very via while`) {
		m[w] = true
	}
	return m
}()

// docVec is one text's terms (interned ids, ascending), their counts, and
// their lnc weights (1 + ln tf, length-normalised).
type docVec struct {
	ids    []int32
	counts []int32
	w      []float32
}

// docKey names a cached segment vector: its thread, first slot and size
// (a tool_call segment grows as its results arrive).
type docKey struct {
	thread      string
	index, size int
}

// Bounds of the lexicon's caches: past them both are emptied (every
// vector is recomputed once, from its text).
const (
	maxLexiconDocs  = 100_000
	maxLexiconTerms = 1 << 20
)

// lexicon interns terms and caches segment vectors. It is safe for
// concurrent use.
type lexicon struct {
	mu   sync.Mutex
	ids  map[string]int32
	docs map[docKey]docVec
	buf  []byte
}

// vector returns the vector of a segment's text, cached under key (a
// zero key is not cached).
func (x *lexicon) vector(key docKey, text string) docVec {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.ids == nil || len(x.docs) > maxLexiconDocs || len(x.ids) > maxLexiconTerms {
		x.ids, x.docs = map[string]int32{}, map[docKey]docVec{}
	}
	if v, ok := x.docs[key]; ok && key.thread != "" {
		return v
	}
	v := x.terms(text)
	if key.thread != "" {
		x.docs[key] = v
	}
	return v
}

// terms splits text into terms — runs of letters and digits, lower case,
// at least two characters, stop words left out, a plural 's' cut — and
// builds its vector. Callers hold x.mu.
func (x *lexicon) terms(text string) docVec {
	counts := map[int32]int32{}
	emit := func() {
		w := x.buf
		x.buf = x.buf[:0]
		if len(w) < 2 || (len(w) < 8 && stopWords[string(w)]) || utf8.RuneCount(w) < 2 {
			return
		}
		if n := len(w); n > 4 && w[n-1] == 's' && w[n-2] != 's' && w[n-2] != 'u' && w[n-2] != 'i' {
			w = w[:n-1]
		}
		id, ok := x.ids[string(w)]
		if !ok {
			id = int32(len(x.ids))
			x.ids[string(w)] = id
		}
		counts[id]++
	}
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			switch {
			case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
				x.buf = append(x.buf, c)
			case c >= 'A' && c <= 'Z':
				x.buf = append(x.buf, c+'a'-'A')
			default:
				emit()
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(text[i:])
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			x.buf = utf8.AppendRune(x.buf, unicode.ToLower(r))
		} else {
			emit()
		}
		i += n
	}
	emit()
	v := docVec{ids: make([]int32, 0, len(counts))}
	for id := range counts {
		v.ids = append(v.ids, id)
	}
	slices.Sort(v.ids)
	v.counts, v.w = make([]int32, len(v.ids)), make([]float32, len(v.ids))
	var norm float64
	for i, id := range v.ids {
		v.counts[i] = counts[id]
		w := 1 + math.Log(float64(counts[id]))
		v.w[i] = float32(w)
		norm += w * w
	}
	if norm > 0 {
		norm = math.Sqrt(norm)
		for i := range v.w {
			v.w[i] = float32(float64(v.w[i]) / norm)
		}
	}
	return v
}

// relevance scores each document against the query (the sum of the query
// vectors' counts), 0 to 1: the dot product of the document's lnc vector
// with the query's ltc vector, idf = ln(1 + N/df) over docs. A document
// sharing no term with the query scores 0.
func relevance(docs []docVec, query ...docVec) []float64 {
	scores := make([]float64, len(docs))
	qtf := map[int32]int32{}
	for _, q := range query {
		for i, id := range q.ids {
			qtf[id] += q.counts[i]
		}
	}
	if len(qtf) == 0 || len(docs) == 0 {
		return scores
	}
	qids := make([]int32, 0, len(qtf))
	for id := range qtf {
		qids = append(qids, id)
	}
	slices.Sort(qids)
	// Both id lists are ascending: each document is merged with the query.
	merge := func(d docVec, fn func(k, j int)) {
		for j, k := 0, 0; j < len(d.ids) && k < len(qids); {
			switch {
			case d.ids[j] < qids[k]:
				j++
			case d.ids[j] > qids[k]:
				k++
			default:
				fn(k, j)
				j++
				k++
			}
		}
	}
	df := make([]int, len(qids))
	for _, d := range docs {
		merge(d, func(k, _ int) { df[k]++ })
	}
	qw := make([]float64, len(qids))
	var qn float64
	n := float64(len(docs))
	for k, id := range qids {
		f := max(df[k], 1) // a term no document has: as rare as can be
		qw[k] = (1 + math.Log(float64(qtf[id]))) * math.Log(1+n/float64(f))
		qn += qw[k] * qw[k]
	}
	qn = math.Sqrt(qn)
	for i, d := range docs {
		var dot float64
		merge(d, func(k, j int) { dot += qw[k] * float64(d.w[j]) })
		if dot > 0 {
			scores[i] = min(1, dot/qn)
		}
	}
	return scores
}
