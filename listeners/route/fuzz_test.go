package route

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/listeners/tools/calculate"
)

// FuzzArithmetic feeds needs to the arithmetic reader: it never panics,
// and what it returns is an expression the calculate tool parses (it may
// still refuse it as math: a division by zero, a limit).
func FuzzArithmetic(f *testing.F) {
	for _, s := range []string{"I need to multiply six by seven", "what's (2+3)*4?", "the sum of 1, 2 and 3",
		"square root of 16 plus 2 to the power of 3", "one hundred and five minus twenty-one", "a dozen eggs",
		"negative negative minus - - 3", "((((((1", "3 point", "ten percent of", "then add 2", "2^^3", "×÷"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, need string) {
		expr, err := Arithmetic(need)
		if err != nil {
			if !errors.Is(err, ErrNoArithmetic) && !errors.Is(err, ErrIncompleteArithmetic) {
				t.Fatalf("Arithmetic(%q): %v is neither ErrNoArithmetic nor ErrIncompleteArithmetic", need, err)
			}
			return
		}
		if _, err := calculate.Eval(expr, calculate.DefaultLimits); err != nil && errors.Is(err, calculate.ErrSyntax) {
			t.Fatalf("Arithmetic(%q) = %q, which calculate cannot parse: %v", need, expr, err)
		}
	})
}

// FuzzAnalyze feeds texts to the analysis and the TF-IDF index: no panic,
// features are never empty strings, scores stay within [0, 1].
func FuzzAnalyze(f *testing.F) {
	for _, s := range []string{"I need to multiply six by seven", "XMLToJSON run_command", "ÜBERgrößenÄnderung",
		"6*7 https://example.org:8080/a", strings.Repeat("a", 100), "\xff\xfe"} {
		f.Add(s, "read the notes file")
	}
	caps := shipped(f)
	f.Fuzz(func(t *testing.T, desc, need string) {
		for _, q := range []bool{false, true} {
			for _, feat := range analyze(desc, q) {
				if feat == "" {
					t.Fatalf("analyze(%q) made an empty feature", desc)
				}
			}
		}
		cs := append([]Capability{{Name: "fuzzed", Description: desc}}, caps...)
		ix, err := BuildIndex(context.Background(), TFIDF{}, cs, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ix.Search(context.Background(), need, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range got {
			if c.Score <= 0 || c.Score > 1.0001 {
				t.Fatalf("score %v for %s", c.Score, c.Name)
			}
		}
	})
}

// FuzzEmbeddingReply feeds reply bodies to both providers' decoders: no
// panic; an accepted reply holds one non-empty vector per input.
func FuzzEmbeddingReply(f *testing.F) {
	f.Add([]byte(`{"data":[{"index":1,"embedding":[1,2]},{"index":0,"embedding":[3,4]}]}`), 2)
	f.Add([]byte(`{"embeddings":[[1,2],[3,4]]}`), 2)
	f.Add([]byte(`{"data":[{"index":-1}]}`), 1)
	f.Add([]byte(`{"embeddings":null}`), 0)
	f.Fuzz(func(t *testing.T, body []byte, n int) {
		if n < 0 || n > 64 {
			return
		}
		for _, decode := range []func([]byte, int) ([][]float32, error){decodeOpenAI, decodeOllama} {
			vs, err := decode(body, n)
			if err != nil {
				continue
			}
			if len(vs) != n {
				t.Fatalf("%d vectors for %d inputs", len(vs), n)
			}
			for _, v := range vs {
				if len(v) == 0 {
					t.Fatal("an empty vector accepted")
				}
			}
		}
	})
}
