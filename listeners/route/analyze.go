package route

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// The text analysis of the TF-IDF embedder. A text becomes a bag of
// features:
//
//   - words: runs of letters, split where the case changes inside a word
//     (OriginalSender → original sender, XMLToJSON → xml to json) and at
//     '_', '-', '.' (run_command → run command), lower-cased, without stop
//     words, each folded by a light English stemmer (stem): plural, -ed,
//     -ing, -er and a few derivational endings, so "calculates",
//     "calculated", "calculation" and "calculator" are one feature;
//   - concepts: a word listed in the concept table (concepts.go) also adds
//     its concept ("@arithmetic" for multiply, sum, six, …), so a request
//     and a description that share no word can still meet;
//   - arithmetic written in symbols — a chunk between spaces made only of
//     digits, operators and parentheses ("6*7", "42", "(2+3)") — adds
//     "@arithmetic" in a query; in a description it adds nothing (a limit
//     such as "at most 256 bytes" says nothing about arithmetic). Digits
//     inside other chunks (a URL's port, "file2.txt") are separators.
//
// Sub-word features (character trigrams) are not used: tried on the
// shipped listeners, they let unrelated descriptions share fragments ("say
// hello" ranked run_command first) and lowered every good match; the
// stemmer and the concept table carry the variations that matter.
//
// Texts are bounded: analysis reads at most maxAnalyzedBytes of a text.

// maxAnalyzedBytes bounds the text one analysis reads.
const maxAnalyzedBytes = 64 << 10

// maxWordBytes bounds a word; longer runs (a base64 blob, say) are skipped.
const maxWordBytes = 64

// conceptPrefix marks concept features ("@arithmetic"); words never start
// with it.
const conceptPrefix = "@"

// analyze returns the features of text, with repetitions (the term
// frequencies). query selects the query-side rule for arithmetic.
func analyze(text string, query bool) []string {
	if len(text) > maxAnalyzedBytes {
		text = text[:maxAnalyzedBytes]
	}
	var out []string
	for _, chunk := range strings.Fields(text) {
		chunk = strings.Trim(chunk, `?!,;:"'`)
		if isArithmetic(chunk) {
			if query {
				out = append(out, conceptPrefix+conceptArithmetic)
			}
			continue
		}
		for _, w := range words(chunk) {
			lw := strings.ToLower(w)
			if stopWords[lw] {
				continue
			}
			s := stem(lw)
			out = append(out, s)
			for _, c := range conceptsOf(lw, s) {
				out = append(out, conceptPrefix+c)
			}
		}
	}
	return out
}

// arithmeticChars are the characters of a chunk of arithmetic: digits,
// operators, parentheses, a decimal point.
const arithmeticChars = "0123456789.+-*/^%()=×÷"

// isArithmetic reports whether a whitespace-separated chunk is arithmetic
// written in symbols ("6*7", "42", "(2+3)", "+"): made only of digits,
// operators and parentheses. A URL, a path or a version with letters is
// not ("notes/a.txt", "example.org:8080").
func isArithmetic(chunk string) bool {
	if chunk == "" || chunk == "." || chunk == "-" {
		return false
	}
	for _, r := range chunk {
		if !strings.ContainsRune(arithmeticChars, r) {
			return false
		}
	}
	return true
}

// words splits text into words: runs of letters, themselves split where
// their case changes. Digits and punctuation separate words; a run longer
// than maxWordBytes is skipped.
func words(text string) []string {
	var out []string
	i := 0
	for i < len(text) {
		r, size := utf8.DecodeRuneInString(text[i:])
		if !unicode.IsLetter(r) {
			i += size
			continue
		}
		j := i + size
		for j < len(text) {
			r2, s2 := utf8.DecodeRuneInString(text[j:])
			if !unicode.IsLetter(r2) {
				break
			}
			j += s2
		}
		if j-i <= maxWordBytes {
			out = append(out, splitCase(text[i:j])...)
		}
		i = j
	}
	return out
}

// splitCase splits a run of letters where its case changes: a lower-case
// letter followed by an upper-case one (originalSender), and the last
// capital of a run of capitals followed by lower case (XMLTo → XML To).
func splitCase(s string) []string {
	var out []string
	rs := []rune(s)
	start := 0
	for i := 1; i < len(rs); i++ {
		prevUpper, curUpper := unicode.IsUpper(rs[i-1]), unicode.IsUpper(rs[i])
		nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
		if (!prevUpper && curUpper) || (prevUpper && curUpper && nextLower) {
			out = append(out, string(rs[start:i]))
			start = i
		}
	}
	return append(out, string(rs[start:]))
}

// stopWords are words that say nothing about a capability: articles,
// pronouns, auxiliaries, and the padding of requests ("I need to", "could
// you please").
var stopWords = setOf(
	"a", "an", "the", "and", "or", "but", "if", "then", "else", "of", "to", "in", "on", "at", "by", "for", "with",
	"from", "into", "onto", "as", "about", "than", "so", "such", "via", "per",
	"i", "me", "my", "mine", "we", "us", "our", "you", "your", "he", "she", "it", "its", "they", "them", "their",
	"this", "that", "these", "those", "there", "here", "what", "which", "who", "whom", "whose", "when", "where",
	"why", "how",
	"is", "are", "was", "were", "be", "been", "being", "am", "do", "does", "did", "done", "have", "has", "had",
	"will", "would", "shall", "should", "can", "could", "may", "might", "must",
	"not", "no", "yes", "all", "any", "some", "each", "every", "other", "another", "more", "most", "own", "same",
	"just", "also", "only", "too", "very", "please", "need", "needs", "want", "wants", "like", "let", "get",
	"gets", "got", "give", "make", "help", "something", "anything", "thing", "things", "one's",
	"e", "g", "eg", "ie", "etc", "s",
)

func setOf(ws ...string) map[string]bool {
	m := make(map[string]bool, len(ws))
	for _, w := range ws {
		m[w] = true
	}
	return m
}

// stem folds an English word's inflections and a few derivational endings
// so related forms share one feature. It is deliberately light (no
// dictionary): read/reads/reading, file/files, calculate/calculation/
// calculator, greet/greeting/greeter, multiply/multiplies/multiplied, fetch/
// fetches, run/running. Words that are not ASCII letters are left as they
// are; so are words of three letters or fewer.
func stem(w string) string {
	if len(w) <= 3 || !asciiLetters(w) {
		return w
	}
	// Plurals and third person.
	switch {
	case strings.HasSuffix(w, "sses"):
		w = w[:len(w)-2]
	case strings.HasSuffix(w, "ies") && len(w) > 4:
		w = w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "ss"), strings.HasSuffix(w, "us"), strings.HasSuffix(w, "is"):
	case strings.HasSuffix(w, "s"):
		w = w[:len(w)-1]
	}
	// Past tense and gerund.
	switch {
	case strings.HasSuffix(w, "ied") && len(w) > 4:
		w = w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "eed"):
	case strings.HasSuffix(w, "ed") && len(w)-2 >= 3 && hasVowel(w[:len(w)-2]):
		w = undouble(w[:len(w)-2])
	case strings.HasSuffix(w, "ing") && len(w)-3 >= 3 && hasVowel(w[:len(w)-3]):
		w = undouble(w[:len(w)-3])
	}
	// Derivational endings.
	for _, r := range [...]struct{ suffix, repl string }{
		{"ational", "ate"}, {"ization", "ize"}, {"ation", "ate"}, {"ator", "ate"}, {"izer", "ize"},
		{"ement", "e"}, {"ment", ""}, {"ness", ""},
	} {
		if strings.HasSuffix(w, r.suffix) && len(w)-len(r.suffix)+len(r.repl) >= 4 {
			w = w[:len(w)-len(r.suffix)] + r.repl
			break
		}
	}
	if strings.HasSuffix(w, "er") && len(w)-2 >= 4 {
		w = w[:len(w)-2]
	}
	if len(w) >= 4 && w[len(w)-1] == 'e' && w[len(w)-2] != 'e' {
		w = w[:len(w)-1]
	}
	return w
}

func asciiLetters(w string) bool {
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return false
		}
	}
	return true
}

func hasVowel(w string) bool { return strings.ContainsAny(w, "aeiouy") }

// undouble drops the second of a doubled final consonant (running → run,
// stopped → stop), except ll, ss and zz (called → call).
func undouble(w string) string {
	n := len(w)
	if n >= 2 && w[n-1] == w[n-2] && !strings.ContainsRune("aeiouylsz", rune(w[n-1])) {
		return w[:n-1]
	}
	return w
}
