package route

import (
	"context"
	"fmt"
	"math"
)

// Embedder converts texts to vectors (seed 000 §10.2: the embedding
// provider). Embed returns one vector per text, in order; two texts are
// similar when the cosine of their vectors is high. Implementations: TFIDF
// (built in, the default: no network, deterministic), OpenAI (the
// /v1/embeddings endpoint) and Ollama (/api/embed).
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([]Vector, error)
}

// EmbedFunc adapts a function to Embedder.
type EmbedFunc func(ctx context.Context, texts []string) ([]Vector, error)

// Embed calls f.
func (f EmbedFunc) Embed(ctx context.Context, texts []string) ([]Vector, error) { return f(ctx, texts) }

// Fitter is implemented by an Embedder whose vectors depend on the corpus
// (TF-IDF: the vocabulary and each term's rarity). The index fits it on the
// capability documents and embeds documents and queries with the result.
type Fitter interface {
	Fit(docs []string) Embedder
}

// Vector is one embedding: dense (the API providers: Dense holds every
// dimension) or sparse (TF-IDF: Indices holds the features present, in
// increasing order, and Values their weights). The index normalises it to
// unit length.
type Vector struct {
	// Dense is a dense embedding; nil for a sparse one.
	Dense []float32
	// Indices and Values are a sparse embedding's features and weights.
	Indices []int32
	Values  []float32
}

// Sparse reports whether v is a sparse vector.
func (v Vector) Sparse() bool { return v.Dense == nil }

// norm returns v's Euclidean length.
func (v Vector) norm() float64 {
	var s float64
	if v.Dense != nil {
		for _, x := range v.Dense {
			s += float64(x) * float64(x)
		}
	} else {
		for _, x := range v.Values {
			s += float64(x) * float64(x)
		}
	}
	return math.Sqrt(s)
}

// unit returns a copy of v scaled to length 1 (the zero vector stays zero).
// A vector holding NaN or an infinity is an error: it would poison every
// score it takes part in.
func (v Vector) unit() (Vector, error) {
	n := v.norm()
	if math.IsNaN(n) || math.IsInf(n, 0) {
		return Vector{}, fmt.Errorf("%w: the vector holds a value that is not a finite number", ErrEmbedding)
	}
	out := Vector{}
	scale := float32(0)
	if n > 0 {
		scale = float32(1 / n)
	}
	if v.Dense != nil {
		out.Dense = make([]float32, len(v.Dense))
		for i, x := range v.Dense {
			out.Dense[i] = x * scale
		}
		return out, nil
	}
	if len(v.Indices) != len(v.Values) {
		return Vector{}, fmt.Errorf("%w: a sparse vector has %d indices and %d values", ErrEmbedding, len(v.Indices), len(v.Values))
	}
	out.Indices = append([]int32(nil), v.Indices...)
	out.Values = make([]float32, len(v.Values))
	for i, x := range v.Values {
		out.Values[i] = x * scale
	}
	return out, nil
}
