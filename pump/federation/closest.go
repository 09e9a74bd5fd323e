package federation

import (
	"cmp"
	"slices"
	"strings"
)

// byCloseness sorts tags by how close each is to want (edit distance,
// ignoring case), the closest first, ties by name: an imported tag the
// peer does not export is told with what it does export, a typo's fix
// first.
func byCloseness(want string, tags []string) []string {
	out := slices.Clone(tags)
	w := strings.ToLower(want)
	d := make(map[string]int, len(out))
	for _, t := range out {
		d[t] = editDistance(w, strings.ToLower(t))
	}
	slices.SortFunc(out, func(a, b string) int {
		return cmp.Or(cmp.Compare(d[a], d[b]), cmp.Compare(a, b))
	})
	return out
}

// editDistance is the Levenshtein distance between a and b, by runes.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
