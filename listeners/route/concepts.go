package route

import "sort"

// The concept table of the TF-IDF embedder: small groups of words that
// name one kind of capability. A word of a group adds the group's concept
// feature ("@arithmetic") to the text it occurs in, on both sides — in a
// capability's description and in a need — so "multiply six by seven"
// meets "Evaluates an arithmetic expression" although they share no word.
// Words are matched as written (lower-cased) and by their stem. The table
// is deliberately small and general; a listener whose description uses its
// own vocabulary is still found by its words.
//
//	@arithmetic  arithmetic math calculate compute equation formula add
//	             sum plus subtract minus difference
//	             multiply times product divide quotient ratio percent power
//	             exponent squared sqrt modulo remainder average number
//	             digit integer decimal and the number words (zero, two … ninety,
//	             hundred, thousand, million, billion, dozen, half)
//	@files       file filesystem folder directory path disk txt
//	@web         url http https web website webpage page site link download
//	             internet online browse html
//	@search      search google bing lookup
//	@memory      remember memorize recall key value cache persist forget
//	@command     run execute exec program command shell process binary
//	             script terminal cli
//	@convert     convert conversion transform translate json xml yaml csv
//	@greet       greet greeting hello hi hey welcome salute introduce
//	@shout       shout yell scream uppercase capital caps loud
//	@print       print display show output console screen echo
//	@extract     extract xpath select node element
//	@documents   document library librarian archive collection catalog
var conceptGroups = map[string][]string{
	conceptArithmetic: {"arithmetic", "math", "maths", "mathematics", "mathematical", "calculate", "calculation",
		"calculator", "compute", "computation", "equation", "formula",
		"add", "addition", "sum", "plus", "total", "subtract", "subtraction", "minus", "difference", "multiply",
		"multiplication", "times", "product", "divide", "division", "divided", "quotient", "ratio", "fraction",
		"percent", "percentage", "power", "exponent", "squared", "cubed", "sqrt", "modulo", "remainder",
		"average", "number", "numbers", "digit", "integer", "decimal", "numeric",
		"zero", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
		"twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty",
		"thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety", "hundred", "thousand", "million",
		"billion", "dozen", "half"},
	"files":     {"file", "files", "filesystem", "folder", "directory", "dir", "path", "disk", "txt"},
	"web":       {"url", "http", "https", "web", "website", "webpage", "page", "site", "link", "download", "internet", "online", "browse", "html"},
	"search":    {"search", "google", "bing", "lookup"},
	"memory":    {"remember", "memorize", "recall", "key", "value", "cache", "persist", "forget"},
	"command":   {"run", "execute", "exec", "program", "command", "shell", "process", "binary", "script", "terminal", "cli"},
	"convert":   {"convert", "conversion", "transform", "translate", "json", "xml", "yaml", "csv"},
	"greet":     {"greet", "greeting", "hello", "hi", "hey", "welcome", "salute", "introduce"},
	"shout":     {"shout", "yell", "scream", "uppercase", "capital", "caps", "loud"},
	"print":     {"print", "display", "show", "output", "console", "screen", "echo"},
	"extract":   {"extract", "xpath", "select", "node", "element"},
	"documents": {"document", "library", "librarian", "archive", "collection", "catalog"},
}

// conceptArithmetic is the concept numbers and operator symbols add to a
// query.
const conceptArithmetic = "arithmetic"

// conceptIndex maps a word (as written, and its stem) to its concepts.
var conceptIndex = func() map[string][]string {
	m := map[string][]string{}
	add := func(w, c string) {
		for _, have := range m[w] {
			if have == c {
				return
			}
		}
		m[w] = append(m[w], c)
	}
	names := make([]string, 0, len(conceptGroups))
	for c := range conceptGroups {
		names = append(names, c)
	}
	sort.Strings(names) // deterministic feature order
	for _, c := range names {
		for _, w := range conceptGroups[c] {
			add(w, c)
			add(stem(w), c)
		}
	}
	return m
}()

// conceptsOf returns the concepts of a word, given as written (lower-cased)
// and as its stem.
func conceptsOf(word, stemmed string) []string {
	a, b := conceptIndex[word], conceptIndex[stemmed]
	if len(b) == 0 {
		return a
	}
	if len(a) == 0 {
		return b
	}
	out := append([]string(nil), a...)
	for _, c := range b {
		dup := false
		for _, x := range a {
			dup = dup || x == c
		}
		if !dup {
			out = append(out, c)
		}
	}
	return out
}
