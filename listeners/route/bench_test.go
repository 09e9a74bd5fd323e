package route

import (
	"context"
	"fmt"
	"testing"
)

// synthetic returns n capabilities with varied descriptions built from a
// small vocabulary, each carrying one of the shipped payload types (so its
// document holds field names and doc texts, as a real listener's does).
func synthetic(t testing.TB, n int) []Capability {
	base := shipped(t)
	verbs := []string{"reads", "writes", "lists", "deletes", "converts", "summarises", "translates", "fetches",
		"searches", "stores", "validates", "formats", "compresses", "encrypts", "signs", "renders", "schedules",
		"monitors", "indexes", "classifies"}
	objects := []string{"invoices", "images", "calendar events", "emails", "tickets", "log files", "orders",
		"customer records", "weather forecasts", "stock quotes", "recipes", "maps", "contracts", "songs",
		"spreadsheets", "pull requests", "sensor readings", "flight bookings", "support chats", "receipts",
		"news articles", "tax forms", "shipping labels", "medical notes", "school grades"}
	places := []string{"in the archive", "from the web", "for the finance team", "on the shared drive",
		"in the database", "for a customer", "in real time", "every night", "on request", "with an audit trail"}
	out := make([]Capability, n)
	for i := range out {
		b := base[i%len(base)]
		out[i] = Capability{
			Name: fmt.Sprintf("cap-%04d", i),
			Description: fmt.Sprintf("%s %s %s", verbs[i%len(verbs)], objects[(i/len(verbs))%len(objects)],
				places[(i/7)%len(places)]),
			Payload: b.Payload,
		}
	}
	return out
}

// BenchmarkRank1000 is the ranking of one need against 1,000 listener
// descriptions (TF-IDF, the default embedder): embedding the need, scoring
// every description, masking and sorting — the cost of one query once the
// index is built. Target: < 5 ms per query.
func BenchmarkRank1000(b *testing.B) {
	caps := synthetic(b, 1000)
	ix, err := BuildIndex(context.Background(), TFIDF{}, caps, 0, nil)
	if err != nil {
		b.Fatal(err)
	}
	needs := []string{"I need to multiply six by seven", "read the invoices from the archive",
		"translate the news articles for a customer", "please encrypt the medical notes every night"}
	mask := Deny("cap-0001", "cap-0002")
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := ix.Search(ctx, needs[i%len(needs)], mask, 10); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRank1000Dense is the same ranking with dense 768-dimension
// vectors (what an embeddings API returns), the need's vector given: the
// scoring alone, without the API's round trip.
func BenchmarkRank1000Dense(b *testing.B) {
	const dim = 768
	caps := synthetic(b, 1000)
	e := EmbedFunc(func(_ context.Context, texts []string) ([]Vector, error) {
		out := make([]Vector, len(texts))
		for i, t := range texts {
			out[i] = pseudoVector(t, dim)
		}
		return out, nil
	})
	ix, err := BuildIndex(context.Background(), e, caps, 0, nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := ix.Search(ctx, "read the invoices from the archive", nil, 10); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBuild1000 is building the TF-IDF index of 1,000 listeners: what
// a reload or a listener added over OOB costs the next request.
func BenchmarkBuild1000(b *testing.B) {
	caps := synthetic(b, 1000)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := BuildIndex(ctx, TFIDF{}, caps, 0, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// pseudoVector is a deterministic dense vector of text (FNV-seeded).
func pseudoVector(text string, dim int) Vector {
	h := uint32(2166136261)
	for i := 0; i < len(text); i++ {
		h ^= uint32(text[i])
		h *= 16777619
	}
	v := Vector{Dense: make([]float32, dim)}
	for i := range v.Dense {
		h ^= h << 13
		h ^= h >> 17
		h ^= h << 5
		v.Dense[i] = float32(h%2000)/1000 - 1
	}
	return v
}
