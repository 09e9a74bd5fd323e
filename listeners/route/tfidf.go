package route

import (
	"context"
	"math"
	"sort"
)

// TFIDF is the built-in embedder and the default: TF-IDF over the features
// of the text analysis (analyze.go — words folded by a light stemmer, stop
// words dropped, the concept table's concepts added). It needs no network,
// and it is deterministic: the same documents and query always give the
// same scores.
//
// A feature's weight in a text is (1 + ln tf) × idf, where tf counts it in
// the text and idf = ln((1+N)/(1+df)) + 1 for N documents of which df hold
// it; vectors are sparse and unit length, so their dot product is the
// cosine. Features of a query that no document holds are ignored.
//
// TFIDF is a Fitter: the index fits it on the capability documents. Used
// unfitted, Embed fits it on the texts it is given.
type TFIDF struct{}

// Fit learns the vocabulary and the inverse document frequencies of docs.
func (TFIDF) Fit(docs []string) Embedder {
	m := &tfidfModel{vocab: map[string]int32{}}
	df := []int{}
	for _, d := range docs {
		seen := map[string]bool{}
		for _, f := range analyze(d, false) {
			if seen[f] {
				continue
			}
			seen[f] = true
			i, ok := m.vocab[f]
			if !ok {
				i = int32(len(df))
				m.vocab[f] = i
				df = append(df, 0)
			}
			df[i]++
		}
	}
	m.idf = make([]float32, len(df))
	n := float64(len(docs))
	for i, d := range df {
		m.idf[i] = float32(math.Log((1+n)/(1+float64(d))) + 1)
	}
	return m
}

// Embed fits on texts and embeds them as documents.
func (t TFIDF) Embed(ctx context.Context, texts []string) ([]Vector, error) {
	return t.Fit(texts).Embed(ctx, texts)
}

// tfidfModel is a fitted TFIDF.
type tfidfModel struct {
	vocab map[string]int32
	idf   []float32
}

// Embed embeds texts as documents.
func (m *tfidfModel) Embed(ctx context.Context, texts []string) ([]Vector, error) {
	out := make([]Vector, len(texts))
	for i, t := range texts {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		out[i] = m.vector(analyze(t, false))
	}
	return out, nil
}

// EmbedQuery embeds a need, with the query-side rules for numbers and
// operator symbols.
func (m *tfidfModel) EmbedQuery(_ context.Context, text string) (Vector, error) {
	return m.vector(analyze(text, true)), nil
}

// vector weighs features against the fitted vocabulary.
func (m *tfidfModel) vector(features []string) Vector {
	tf := map[int32]int{}
	for _, f := range features {
		if i, ok := m.vocab[f]; ok {
			tf[i]++
		}
	}
	v := Vector{Indices: make([]int32, 0, len(tf)), Values: make([]float32, 0, len(tf))}
	for i := range tf {
		v.Indices = append(v.Indices, i)
	}
	sort.Slice(v.Indices, func(a, b int) bool { return v.Indices[a] < v.Indices[b] })
	for _, i := range v.Indices {
		v.Values = append(v.Values, float32(1+math.Log(float64(tf[i])))*m.idf[i])
	}
	return v
}

// QueryEmbedder is implemented by an Embedder that embeds a need
// differently from a document (TF-IDF counts numbers and operator symbols
// in a need only; an API model may want a query prefix). The index uses it
// for needs when present, Embed otherwise.
type QueryEmbedder interface {
	EmbedQuery(ctx context.Context, text string) (Vector, error)
}
