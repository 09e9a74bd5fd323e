package route

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
)

// Index holds the embeddings of a set of capabilities and answers
// nearest-neighbour queries by cosine similarity. Sparse vectors (TF-IDF)
// are searched through an inverted index (a need touches only the
// documents sharing a feature with it); dense ones by a dot product with
// each row of a contiguous matrix. An Index is immutable and safe for
// concurrent use.
type Index struct {
	version  uint64
	caps     []Capability
	keys     []string // lower-cased names, for ties
	docs     []string
	vectors  []Vector // unit length, one per capability
	embedder Embedder // fitted
	postings map[int32][]posting
	dense    []float32 // len(caps) × dim, row-major
	dim      int
}

// posting is one document holding a feature, with its weight there.
type posting struct {
	doc int32
	w   float32
}

// Candidate is one ranked capability.
type Candidate struct {
	// Capability is the listener.
	Capability
	// Score is the cosine similarity of the need and the capability's
	// document: 0 (nothing in common) to 1.
	Score float64
}

// BuildIndex embeds the documents of caps (Document) with e — fitting e on
// them first when it is a Fitter — and indexes them. version is the
// source's version the index reflects. prev, when not nil, is the index
// being replaced: a document whose text is unchanged keeps its vector
// instead of being embedded again (for an API provider: no request for the
// listeners a reload left alone).
func BuildIndex(ctx context.Context, e Embedder, caps []Capability, version uint64, prev *Index) (*Index, error) {
	ix := &Index{version: version, caps: append([]Capability(nil), caps...), docs: make([]string, len(caps))}
	ix.keys = make([]string, len(caps))
	for i, c := range caps {
		ix.docs[i] = Document(c)
		ix.keys[i] = strings.ToLower(c.Name)
	}
	fitted := false
	if f, ok := e.(Fitter); ok {
		e, fitted = f.Fit(ix.docs), true
	}
	ix.embedder = e
	ix.vectors = make([]Vector, len(caps))
	var known map[string]Vector
	if !fitted && prev != nil {
		known = make(map[string]Vector, len(prev.docs))
		for i, d := range prev.docs {
			known[d] = prev.vectors[i]
		}
	}
	var todo []int
	for i, d := range ix.docs {
		if v, ok := known[d]; ok {
			ix.vectors[i] = v
			continue
		}
		todo = append(todo, i)
	}
	if len(todo) > 0 {
		texts := make([]string, len(todo))
		for j, i := range todo {
			texts[j] = ix.docs[i]
		}
		vs, err := e.Embed(ctx, texts)
		if err != nil {
			return nil, fmt.Errorf("route: embed %d capability descriptions: %w", len(texts), err)
		}
		if len(vs) != len(texts) {
			return nil, fmt.Errorf("route: %w: %d vectors for %d descriptions", ErrEmbedding, len(vs), len(texts))
		}
		for j, i := range todo {
			u, err := vs[j].unit()
			if err != nil {
				return nil, fmt.Errorf("route: capability %s: %w", caps[i].Name, err)
			}
			ix.vectors[i] = u
		}
	}
	if err := ix.layout(); err != nil {
		return nil, err
	}
	return ix, nil
}

// layout builds the search structure: postings for sparse vectors, the
// matrix for dense ones. Mixed kinds or dimensions are an error.
func (ix *Index) layout() error {
	if len(ix.vectors) == 0 {
		return nil
	}
	if ix.vectors[0].Sparse() {
		ix.postings = map[int32][]posting{}
		for d, v := range ix.vectors {
			if !v.Sparse() {
				return fmt.Errorf("route: %w: sparse and dense vectors mixed", ErrEmbedding)
			}
			for k, f := range v.Indices {
				ix.postings[f] = append(ix.postings[f], posting{doc: int32(d), w: v.Values[k]})
			}
		}
		return nil
	}
	ix.dim = len(ix.vectors[0].Dense)
	if ix.dim == 0 {
		return fmt.Errorf("route: %w: an empty vector", ErrEmbedding)
	}
	ix.dense = make([]float32, 0, len(ix.vectors)*ix.dim)
	for i, v := range ix.vectors {
		if v.Sparse() || len(v.Dense) != ix.dim {
			return fmt.Errorf("route: %w: capability %s has a vector of %d dimensions, the first had %d",
				ErrEmbedding, ix.caps[i].Name, len(v.Dense), ix.dim)
		}
		ix.dense = append(ix.dense, v.Dense...)
	}
	return nil
}

// Version returns the source version the index reflects.
func (ix *Index) Version() uint64 { return ix.version }

// Len returns the number of capabilities indexed.
func (ix *Index) Len() int { return len(ix.caps) }

// Search ranks the capabilities by similarity to need, then masks them
// (seed 000 §10.3: rank, then mask): it returns the candidates mask allows
// whose score is above zero, best first (ties by name), at most limit of
// them (limit ≤ 0: all).
func (ix *Index) Search(ctx context.Context, need string, mask Mask, limit int) ([]Candidate, error) {
	q, err := ix.embedQuery(ctx, need)
	if err != nil {
		return nil, err
	}
	scores := ix.rank(q)
	type hit struct {
		doc   int
		score float32
	}
	hits := make([]hit, 0, 64)
	for i, s := range scores {
		if s > 0 && mask.Allows(ix.caps[i].Name) {
			hits = append(hits, hit{i, s})
		}
	}
	slices.SortFunc(hits, func(a, b hit) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return strings.Compare(ix.keys[a.doc], ix.keys[b.doc])
	})
	if limit > 0 && len(hits) > limit {
		hits = hits[:limit]
	}
	out := make([]Candidate, len(hits))
	for i, h := range hits {
		out[i] = Candidate{Capability: ix.caps[h.doc], Score: float64(h.score)}
	}
	return out, nil
}

// embedQuery embeds need as a query and normalises it.
func (ix *Index) embedQuery(ctx context.Context, need string) (Vector, error) {
	var (
		v   Vector
		err error
	)
	if qe, ok := ix.embedder.(QueryEmbedder); ok {
		v, err = qe.EmbedQuery(ctx, need)
	} else {
		var vs []Vector
		vs, err = ix.embedder.Embed(ctx, []string{need})
		if err == nil && len(vs) != 1 {
			err = fmt.Errorf("%w: %d vectors for one need", ErrEmbedding, len(vs))
		}
		if err == nil {
			v = vs[0]
		}
	}
	if err != nil {
		return Vector{}, fmt.Errorf("route: embed the need: %w", err)
	}
	u, err := v.unit()
	if err != nil {
		return Vector{}, fmt.Errorf("route: the need: %w", err)
	}
	if ix.dense != nil && (u.Sparse() || len(u.Dense) != ix.dim) {
		return Vector{}, fmt.Errorf("route: %w: the need's vector has %d dimensions, the index %d", ErrEmbedding, len(u.Dense), ix.dim)
	}
	if ix.postings != nil && !u.Sparse() {
		return Vector{}, fmt.Errorf("route: %w: a dense need against a sparse index", ErrEmbedding)
	}
	return u, nil
}

// rank returns the cosine of q with every document.
func (ix *Index) rank(q Vector) []float32 {
	scores := make([]float32, len(ix.caps))
	if ix.postings != nil {
		for k, f := range q.Indices {
			w := q.Values[k]
			for _, p := range ix.postings[f] {
				scores[p.doc] += w * p.w
			}
		}
		return scores
	}
	if ix.dense == nil {
		return scores
	}
	for d := range scores {
		scores[d] = dot(q.Dense, ix.dense[d*ix.dim:(d+1)*ix.dim])
	}
	return scores
}

// dot is the dot product of two vectors of the same length, four lanes at
// a time.
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return s0 + s1 + s2 + s3
}
