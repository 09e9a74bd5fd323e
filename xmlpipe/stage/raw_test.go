package stage

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
)

// rawReply is model output holding n payload elements between prose.
func rawReply(n int) []byte {
	var b bytes.Buffer
	b.WriteString("Here you go:\n")
	for i := range n {
		fmt.Fprintf(&b, "<PoetTask><Text>poem %d</Text></PoetTask>\n", i)
	}
	return b.Bytes()
}

// TestSplitRawIsLinear: 20,000 payload elements split in well under a
// second (the in-place C14N of each took 74 s); the bound is generous for
// a loaded machine under -race.
func TestSplitRawIsLinear(t *testing.T) {
	raw := rawReply(20000)
	t0 := time.Now()
	parts, _, err := SplitRaw(raw)
	took := time.Since(t0)
	if err != nil || len(parts) != 20000 {
		t.Fatalf("%d parts, %v", len(parts), err)
	}
	if got := string(parts[19999].Bytes); got != "<PoetTask><Text>poem 19999</Text></PoetTask>" {
		t.Fatalf("last part %q", got)
	}
	t.Logf("20,000 payloads split in %v", took)
	if took > 10*time.Second {
		t.Fatalf("split took %v", took)
	}
}

func TestSplitRawMax(t *testing.T) {
	tests := []struct {
		name  string
		n     int
		max   int
		parts int
	}{
		{"under", 3, 4, 3},
		{"at", 4, 4, 4},
		{"over", 5, 4, 0},
		{"no limit", 50, 0, 50},
		{"20,000 over 32", 20000, 32, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t0 := time.Now()
			parts, _, err := SplitRawMax(rawReply(tc.n), tc.max)
			if len(parts) != tc.parts {
				t.Fatalf("%d parts, want %d", len(parts), tc.parts)
			}
			if tc.parts > 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var many *TooManyPayloadsError
			if !errors.As(err, &many) || many.Count != tc.n || many.Limit != tc.max || !errors.Is(err, failure.ErrTooManyPayloads) {
				t.Fatalf("error %v, want %d of at most %d", err, tc.n, tc.max)
			}
			var f *failure.Failure
			if !errors.As(err, &f) || f.Stage != failure.StageExtract {
				t.Fatalf("error %T %v is not an extract failure", err, err)
			}
			if took := time.Since(t0); took > 10*time.Second {
				t.Fatalf("refusal took %v", took)
			}
		})
	}
}

func BenchmarkSplitRaw(b *testing.B) {
	for _, n := range []int{1, 32, 2000, 20000} {
		raw := rawReply(n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				if _, _, err := SplitRaw(raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	raw := rawReply(20000)
	b.Run("20000-over-limit-32", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := SplitRawMax(raw, 32); !errors.Is(err, failure.ErrTooManyPayloads) {
				b.Fatal(err)
			}
		}
	})
}
