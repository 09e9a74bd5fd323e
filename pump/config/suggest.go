package config

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
)

// hint returns the " (did you mean …?)" suffix for an unknown key: the
// closest key of the same mapping when one is close enough, else the places
// where the key is valid when it was written at the wrong level.
func hint(key string, candidates []string) string {
	if best := closest(key, candidates); best != "" {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	places := keyIndex()[key]
	if len(places) == 0 {
		return ""
	}
	names := make([]string, len(places))
	for i, section := range places {
		if section == "" {
			names[i] = fmt.Sprintf("top-level %q", key)
		} else {
			names[i] = section + "." + key
		}
	}
	return fmt.Sprintf(" (did you mean %s?)", strings.Join(names, " or "))
}

// closest returns the candidate nearest to key by edit distance
// (transpositions count once), or "" when none is close enough.
func closest(key string, candidates []string) string {
	limit := min(1+len(key)/5, 3)
	best, bestDist := "", limit+1
	for _, c := range candidates {
		if d := editDistance(strings.ToLower(key), strings.ToLower(c)); d < bestDist && d < len(key) {
			best, bestDist = c, d
		}
	}
	return best
}

// ByCloseness returns names sorted by how close each is to want (edit
// distance, ignoring case; transpositions count once), the closest first,
// ties by name: a name that is not known is told with those that are, a
// typo's fix first (an import the peer does not export, say).
func ByCloseness(want string, names []string) []string {
	out := slices.Clone(names)
	w := strings.ToLower(want)
	d := make(map[string]int, len(out))
	for _, n := range out {
		d[n] = editDistance(w, strings.ToLower(n))
	}
	slices.SortFunc(out, func(a, b string) int {
		return cmp.Or(cmp.Compare(d[a], d[b]), cmp.Compare(a, b))
	})
	return out
}

// editDistance is the optimal string alignment distance between a and b.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	if len(ra) > 64 || len(rb) > 64 {
		return len(ra) + len(rb)
	}
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range cur {
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
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}

// keyIndex maps every key of the configuration to the sections (generic
// paths such as "organism" or "listeners[]") where it is valid.
var keyIndex = sync.OnceValue(func() map[string][]string {
	idx := map[string][]string{}
	var walk func(t reflect.Type, section string)
	walk = func(t reflect.Type, section string) {
		if reflect.PointerTo(t).Implements(unmarshalerType) {
			return
		}
		switch t.Kind() {
		case reflect.Struct:
			f := fieldsOf(t)
			for _, name := range f.names {
				idx[name] = append(idx[name], section)
				walk(t.Field(f.index[name]).Type, childKey(section, name))
			}
		case reflect.Pointer:
			walk(t.Elem(), section)
		case reflect.Slice:
			walk(t.Elem(), section+"[]")
		case reflect.Map:
			walk(t.Elem(), section+".*")
		}
	}
	walk(reflect.TypeFor[Organism](), "")
	return idx
})

// Nearest returns the candidate nearest to name when one is close enough
// to be a typo of it (as Suggest judges), else "".
func Nearest(name string, candidates []string) string {
	return closest(name, candidates)
}

// Suggest returns the " (did you mean …?)" suffix naming the candidate
// nearest to name (edit distance, ignoring case; transpositions count
// once) when one is close enough to be a typo of it, else "": for an
// unknown name checked outside this package, such as a tool of the catalog.
func Suggest(name string, candidates []string) string {
	if best := closest(name, candidates); best != "" {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return ""
}
