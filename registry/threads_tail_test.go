package registry

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTail(t *testing.T) {
	th := NewThreads(ThreadsConfig{Organism: "org"})
	root := "6f1c2b1e-8a4d-4c3b-9d2e-1a2b3c4d5e6f"
	if err := th.Begin(root, "client", "a"); err != nil {
		t.Fatal(err)
	}
	b := mustExtend(t, th, root, "b")
	c := mustExtend(t, th, b, "c")
	tests := []struct {
		name  string
		id    string
		n     int
		want  []string
		depth int
	}{
		{"last two of a deep chain", c, 2, []string{"b", "c"}, 5},
		{"reaching into the root's head", c, 4, []string{"client", "a", "b", "c"}, 5},
		{"more than the path holds", b, 9, []string{"org", "client", "a", "b"}, 4},
		{"the root alone", root, 2, []string{"client", "a"}, 3},
		{"unknown thread", "0f1c2b1e-8a4d-4c3b-9d2e-1a2b3c4d5e6f", 2, nil, 0},
		{"nothing asked", c, 0, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, depth := th.Tail(tt.id, tt.n)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Tail(%d) segments (-want +got):\n%s", tt.n, diff)
			}
			if depth != tt.depth {
				t.Errorf("Tail(%d) depth = %d, want %d", tt.n, depth, tt.depth)
			}
		})
	}
}
