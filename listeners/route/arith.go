package route

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ErrNoArithmetic: a need holds no arithmetic the extractive filler can
// read, or more than one reading of it.
var ErrNoArithmetic = errors.New("no arithmetic found")

// ErrIncompleteArithmetic: a need begins arithmetic it does not finish
// ("add 2 and", "multiply six by"): an operation lacks a number. The
// error says which operation and what it lacks.
var ErrIncompleteArithmetic = errors.New("the arithmetic is incomplete")

// maxArithmeticBytes bounds the need Arithmetic reads, and maxDepth the
// nesting of what it parses.
const (
	maxArithmeticBytes = 4096
	maxArithDepth      = 32
)

// Arithmetic reads the arithmetic a need states in words or symbols and
// returns it as an expression of the calculate tool (Python syntax):
//
//	"I need to multiply six by seven"            → 6*7
//	"what is forty two divided by six"            → 42/6
//	"add 2 and 3, then multiply by 4"             → (2+3)*4
//	"subtract five from twenty"                   → 20-5
//	"the square root of 16 plus 2 to the power of 3" → sqrt(16)+2**3
//	"what's (2+3)*4?"                             → (2+3)*4
//
// It understands numbers in digits or words (zero to nineteen, the tens,
// hundred, thousand, million, billion, "a dozen", "point" for decimals),
// the infix words plus, minus, times, multiplied by, divided by, over, mod,
// to the power of, squared, cubed, percent; the verbs add, subtract,
// multiply, divide, raise, square, cube (and "then …" to go on with the
// result); the forms "sum/product/difference/quotient/average/remainder of
// A and B", "square root of A", "A percent of B", "max/min of A and B"; the
// functions sqrt abs round floor ceil exp log log2 log10 sin cos tan; pi;
// and symbols + - * / % ** ^ ( ). Words around the arithmetic are
// ignored, but a number outside it makes the reading ambiguous: then, as
// when nothing is found, the error wraps ErrNoArithmetic.
func Arithmetic(need string) (string, error) {
	if len(need) > maxArithmeticBytes {
		return "", fmt.Errorf("%w: the need is longer than %d bytes", ErrNoArithmetic, maxArithmeticBytes)
	}
	toks := foldNumbers(lexArithmetic(need))
	total := 0
	for _, t := range toks {
		if t.kind == tNum {
			total++
		}
	}
	if total == 0 {
		return "", fmt.Errorf("%w: no number in %q", ErrNoArithmetic, need)
	}
	var best *node
	bestNums, from, to := 0, 0, 0
	// Try each position as the start of the arithmetic; a parse's span is
	// not tried again from inside (it would only find less of it).
	for start := 0; start < len(toks); start++ {
		p := &arithParser{toks: toks, pos: start}
		n, err := p.chain()
		if err != nil || n == nil {
			continue
		}
		if c := n.numbers(); c > bestNums {
			best, bestNums, from, to = n, c, start, p.pos
		}
		start = max(start, p.pos-1)
	}
	if best == nil {
		return "", fmt.Errorf("%w in %q", ErrNoArithmetic, need)
	}
	if lacks := unfinished(toks, best, from, to); lacks != "" {
		return "", fmt.Errorf("%w: %q: %s", ErrIncompleteArithmetic, need, lacks)
	}
	if bestNums < total {
		var left []string
		for i, t := range toks {
			if t.kind == tNum && (i < from || i >= to) {
				left = append(left, t.text)
			}
		}
		return "", fmt.Errorf("%w: %q holds numbers the arithmetic %s leaves out (%s): say which are meant",
			ErrNoArithmetic, need, best.format("", false), strings.Join(left, ", "))
	}
	return best.format("", false), nil
}

// Words that begin arithmetic with its operands after them, and words
// and operators that join two operands: found right before or after the
// arithmetic read, they make it unfinished.
var (
	leadingOps = map[string]bool{"add": true, "subtract": true, "multiply": true, "divide": true, "raise": true}
	ofHeads    = map[string]bool{"sum": true, "total": true, "product": true, "difference": true, "quotient": true,
		"ratio": true, "average": true, "mean": true, "max": true, "maximum": true, "min": true, "minimum": true,
		"remainder": true}
	joiningOps = map[string]bool{"plus": true, "minus": true, "times": true, "multiplied": true, "divided": true,
		"mod": true, "modulo": true}
	verbJoins = map[string]bool{"by": true, "and": true, "to": true, "from": true, "with": true, "into": true}
)

// unfinished says what the arithmetic read from toks[from:to] lacks when
// the need goes on to an operation that has no number of its own: a verb
// right before a lone number or a reading that stops at its joining word
// ("add 2 and", "multiply six by": the verb's second number), a "sum of" form ("the sum of 2": its second number), an
// operator right after it ("2 plus", "6 *": a number after it), or a
// joining word that ends the need ("calculate 42 and": a number after it).
// "" when the arithmetic is complete.
func unfinished(toks []token, read *node, from, to int) string {
	opText := func(t token) string {
		if t.kind == tOp || t.kind == tWord && joiningOps[t.text] {
			return t.text
		}
		return ""
	}
	if to < len(toks) {
		// A dash with words after it is punctuation ("6*7 - quickly").
		if op := opText(toks[to]); op != "" && (op != "-" || to == len(toks)-1) {
			return fmt.Sprintf("%s needs a number after it", op)
		}
	}
	if from > 0 {
		t := toks[from-1]
		switch {
		case t.kind == tWord && leadingOps[t.text]:
			// "raise 3 to the power of 4" is read from the 3 on, complete;
			// the verb lacks its number when only one number follows it or
			// the reading stops at the verb's joining word.
			joined := to < len(toks) && toks[to].kind == tWord && verbJoins[toks[to].text]
			if joined {
				return fmt.Sprintf("%s needs a second number after %q", t.text, toks[to].text)
			}
			if read.op == "" {
				return fmt.Sprintf("%s needs a second number", t.text)
			}
		case t.kind == tWord && (t.text == "of" || t.text == "between") && from > 1 && toks[from-2].kind == tWord &&
			ofHeads[toks[from-2].text]:
			return fmt.Sprintf("the %s %s needs a second number", toks[from-2].text, t.text)
		case opText(t) != "" && t.text != "-":
			return fmt.Sprintf("%s needs a number before it", t.text)
		}
	}
	if to < len(toks) && toks[to].kind == tWord && verbJoins[toks[to].text] && onlyCommas(toks[to+1:]) {
		// The need ends on a word that joins the reading to a number that
		// never comes ("calculate 42 and"): it is not the reading alone.
		return fmt.Sprintf("%q needs a number after it", toks[to].text)
	}
	return ""
}

// onlyCommas reports whether toks holds nothing but commas (the end of a
// need, as far as its arithmetic goes).
func onlyCommas(toks []token) bool {
	for _, t := range toks {
		if t.kind != tComma {
			return false
		}
	}
	return true
}

// Token kinds.
const (
	tWord = iota
	tNum
	tOp // + - * / % **
	tLParen
	tRParen
	tComma
)

type token struct {
	kind int
	text string
}

// lexArithmetic splits a need into words, numbers, operators, parentheses
// and commas; everything else separates tokens.
func lexArithmetic(s string) []token {
	var out []token
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r >= '0' && r <= '9' || r == '.' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9':
			j := i
			dot := false
			for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '.' && !dot && j+1 < len(s) && s[j+1] >= '0' && s[j+1] <= '9') {
				dot = dot || s[j] == '.'
				j++
			}
			j += exponentLen(s[j:])
			text := strings.TrimLeft(s[i:j], "0")
			if text == "" || text[0] == '.' || text[0] == 'e' || text[0] == 'E' {
				text = "0" + text
			}
			out = append(out, token{tNum, text})
			i = j
		case unicode.IsLetter(r):
			j := i
			for j < len(s) {
				r2, s2 := utf8.DecodeRuneInString(s[j:])
				if !unicode.IsLetter(r2) && r2 != '\'' && r2 != '’' {
					break
				}
				j += s2
			}
			w := strings.ToLower(strings.NewReplacer("'", "", "’", "").Replace(s[i:j]))
			out = append(out, token{tWord, w})
			i = j
		case r == '*' && strings.HasPrefix(s[i:], "**"):
			out = append(out, token{tOp, "**"})
			i += 2
		case r == '^':
			out = append(out, token{tOp, "**"})
			i += size
		case r == '×':
			out = append(out, token{tOp, "*"})
			i += size
		case r == '÷':
			out = append(out, token{tOp, "/"})
			i += size
		case strings.ContainsRune("+-*/%", r):
			out = append(out, token{tOp, string(r)})
			i += size
		case r == '(':
			out = append(out, token{tLParen, "("})
			i += size
		case r == ')':
			out = append(out, token{tRParen, ")"})
			i += size
		case r == ',':
			out = append(out, token{tComma, ","})
			i += size
		default:
			i += size
		}
	}
	return out
}

// exponentLen is the length of the decimal exponent s begins with ("e308",
// "E-3", "e+5": an e, an optional sign, digits), or 0 when it begins with
// none: "1e308" is one number, as the calculate tool reads it.
func exponentLen(s string) int {
	if len(s) < 2 || s[0] != 'e' && s[0] != 'E' {
		return 0
	}
	j := 1
	if s[j] == '+' || s[j] == '-' {
		j++
	}
	k := j
	for k < len(s) && s[k] >= '0' && s[k] <= '9' {
		k++
	}
	if k == j {
		return 0
	}
	if r, _ := utf8.DecodeRuneInString(s[k:]); k < len(s) && unicode.IsLetter(r) {
		return 0 // a word such as "2e3x" goes on
	}
	return k
}

// The number words.
var (
	unitWords = map[string]int{"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
		"seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14,
		"fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19}
	tensWords = map[string]int{"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60,
		"seventy": 70, "eighty": 80, "ninety": 90}
	scaleWords = map[string]int{"thousand": 1000, "million": 1000000, "billion": 1000000000}
)

func isNumberWord(t token) bool {
	if t.kind != tWord {
		return false
	}
	_, u := unitWords[t.text]
	_, te := tensWords[t.text]
	_, sc := scaleWords[t.text]
	return u || te || sc || t.text == "hundred" || t.text == "dozen"
}

// foldNumbers turns runs of number words into number tokens: "forty two",
// "twenty-one", "one hundred and five", "a dozen", "three point one four".
func foldNumbers(toks []token) []token {
	var out []token
	for i := 0; i < len(toks); {
		j := i
		if toks[j].kind == tWord && toks[j].text == "a" && j+1 < len(toks) &&
			(toks[j+1].text == "hundred" || toks[j+1].text == "dozen" || scaleWords[toks[j+1].text] > 0) {
			j++ // "a hundred": the a is one
		}
		if !isNumberWord(toks[j]) {
			out = append(out, toks[i])
			i++
			continue
		}
		text, next := readNumberWords(toks, j)
		out = append(out, token{tNum, text})
		i = next
	}
	return out
}

// The kinds of number words, for readNumberWords.
const (
	nwNone = iota
	nwUnit
	nwTeen
	nwTens
	nwHundred
	nwScale
)

// readNumberWords reads the number whose words start at toks[i] and
// returns it in digits with the index after it.
func readNumberWords(toks []token, i int) (string, int) {
	var total, current int64
	last, seenScale := nwNone, false
loop:
	for i < len(toks) {
		w := toks[i]
		if i+1 < len(toks) {
			next := toks[i+1].text
			_, nextUnit := unitWords[next]
			if w.kind == tOp && w.text == "-" && last == nwTens && nextUnit && unitWords[next] > 0 && unitWords[next] < 10 {
				i++ // twenty-one
				continue
			}
			if w.kind == tWord && w.text == "and" && seenScale && last != nwUnit && last != nwTeen && last != nwTens &&
				(nextUnit || tensWords[next] > 0) {
				i++ // one hundred and five
				continue
			}
		}
		if !isNumberWord(w) {
			break
		}
		switch v, unit := unitWords[w.text]; {
		case unit:
			kind := nwUnit
			if v >= 10 {
				kind = nwTeen
			}
			if last == nwUnit || last == nwTeen || last == nwTens && kind == nwTeen || last == nwTens && v == 0 {
				break loop // "two three": two numbers
			}
			current += int64(v)
			last = kind
		case tensWords[w.text] > 0:
			if last == nwUnit || last == nwTeen || last == nwTens {
				break loop
			}
			current += int64(tensWords[w.text])
			last = nwTens
		case w.text == "hundred":
			if last == nwHundred {
				break loop
			}
			current = max(current, 1) * 100
			last, seenScale = nwHundred, true
		case w.text == "dozen":
			current = max(current, 1) * 12
			last = nwHundred
		default: // thousand, million, billion
			total += max(current, 1) * int64(scaleWords[w.text])
			current = 0
			last, seenScale = nwScale, true
		}
		i++
		if total+current > 1e15 {
			break
		}
	}
	text := strconv.FormatInt(total+current, 10)
	if i+1 < len(toks) && toks[i].kind == tWord && toks[i].text == "point" {
		var digits strings.Builder
		j := i + 1
		for j < len(toks) && toks[j].kind == tWord {
			v, ok := unitWords[toks[j].text]
			if !ok || v > 9 {
				break
			}
			digits.WriteByte(byte('0' + v))
			j++
		}
		if digits.Len() > 0 {
			text += "." + digits.String()
			i = j
		}
	}
	return text, i
}

// node is a parsed arithmetic expression.
type node struct {
	op    string // "+", "-", "*", "/", "%", "**", "neg", "fn", "" (a number or a constant)
	text  string // the number, the constant or the function name
	left  *node
	right *node
	args  []*node
}

func num(text string) *node { return &node{text: text} }

func bin(op string, l, r *node) *node { return &node{op: op, left: l, right: r} }

func fn(name string, args ...*node) *node { return &node{op: "fn", text: name, args: args} }

// numbers counts the number literals of n.
func (n *node) numbers() int {
	if n == nil {
		return 0
	}
	c := 0
	if n.op == "" && n.text != "pi" {
		c = 1
	}
	c += n.left.numbers() + n.right.numbers()
	for _, a := range n.args {
		c += a.numbers()
	}
	return c
}

// precedence of each operator (higher binds tighter).
func precedence(op string) int {
	switch op {
	case "+", "-":
		return 1
	case "*", "/", "%":
		return 2
	case "neg":
		return 3
	case "**":
		return 4
	}
	return 5
}

// format renders n in Python syntax, with the parentheses its place needs:
// parentOp is the operator n is an operand of ("" at the top), right
// whether n is its right operand.
func (n *node) format(parentOp string, right bool) string {
	var s string
	switch n.op {
	case "":
		return n.text
	case "fn":
		parts := make([]string, len(n.args))
		for i, a := range n.args {
			parts[i] = a.format("", false)
		}
		return n.text + "(" + strings.Join(parts, ",") + ")"
	case "neg":
		s = "-" + n.left.format("neg", true)
	default:
		s = n.left.format(n.op, false) + n.op + n.right.format(n.op, true)
	}
	if parentOp == "" {
		return s
	}
	p, pp := precedence(n.op), precedence(parentOp)
	switch {
	case p < pp:
		return "(" + s + ")"
	case p > pp:
		return s
	case parentOp == "**":
		// ** is right-associative: a left operand of the same precedence
		// needs parentheses, a right one does not.
		if !right {
			return "(" + s + ")"
		}
		return s
	case right && !(n.op == parentOp && (n.op == "+" || n.op == "*")):
		return "(" + s + ")" // a-(b-c), a/(b*c)
	}
	return s
}

// arithParser is a recursive-descent parser over folded tokens.
type arithParser struct {
	toks  []token
	pos   int
	depth int
}

var errNoParse = errors.New("no parse")

func (p *arithParser) peek(k int) token {
	if p.pos+k < len(p.toks) {
		return p.toks[p.pos+k]
	}
	return token{kind: -1}
}

// word reports whether the next tokens are the words ws, and consumes them.
func (p *arithParser) word(ws ...string) bool {
	for i, w := range ws {
		t := p.peek(i)
		if t.kind != tWord || t.text != w {
			return false
		}
	}
	p.pos += len(ws)
	return true
}

// anyWord consumes one of the words ws.
func (p *arithParser) anyWord(ws ...string) bool {
	for _, w := range ws {
		if p.word(w) {
			return true
		}
	}
	return false
}

func (p *arithParser) op(o string) bool {
	if t := p.peek(0); t.kind == tOp && t.text == o {
		p.pos++
		return true
	}
	return false
}

// chain is an expression followed by "then …" continuations that work on
// its result: "add 2 and 3, then multiply by 4".
func (p *arithParser) chain() (*node, error) {
	acc, err := p.expr()
	if err != nil {
		return nil, err
	}
	for {
		save := p.pos
		if p.peek(0).kind == tComma {
			p.pos++
		}
		p.anyWord("and")
		p.anyWord("then")
		p.anyWord("also")
		next, ok := p.continuation(acc)
		if !ok {
			p.pos = save
			return acc, nil
		}
		acc = next
	}
}

// continuation applies one "then" step to acc.
func (p *arithParser) continuation(acc *node) (*node, bool) {
	save := p.pos
	it := func() {
		p.anyWord("it", "that", "this", "the", "result")
		p.anyWord("result")
	}
	switch {
	case p.anyWord("add", "plus"):
		if y, err := p.expr(); err == nil {
			p.anyWord("to")
			it()
			return bin("+", acc, y), true
		}
	case p.anyWord("subtract", "minus"):
		if y, err := p.expr(); err == nil {
			p.anyWord("from")
			it()
			return bin("-", acc, y), true
		}
	case p.anyWord("multiply", "times"):
		it()
		p.anyWord("by")
		if y, err := p.expr(); err == nil {
			return bin("*", acc, y), true
		}
	case p.anyWord("divide"):
		it()
		p.anyWord("by")
		if y, err := p.expr(); err == nil {
			return bin("/", acc, y), true
		}
	case p.anyWord("square"):
		it()
		return bin("**", acc, num("2")), true
	}
	p.pos = save
	return nil, false
}

// expr := term { (+ | - | plus | minus) term }
func (p *arithParser) expr() (*node, error) {
	if p.depth++; p.depth > maxArithDepth {
		return nil, errNoParse
	}
	defer func() { p.depth-- }()
	l, err := p.term()
	if err != nil {
		return nil, err
	}
	for {
		save := p.pos
		var op string
		switch {
		case p.op("+"), p.word("plus"):
			op = "+"
		case p.op("-"), p.word("minus"):
			op = "-"
		default:
			return l, nil
		}
		r, err := p.term()
		if err != nil {
			p.pos = save
			return l, nil
		}
		l = bin(op, l, r)
	}
}

// term := power { (* | / | % | times | multiplied by | divided by | over | mod) power }
func (p *arithParser) term() (*node, error) {
	l, err := p.power()
	if err != nil {
		return nil, err
	}
	for {
		save := p.pos
		var op string
		switch {
		case p.op("*"), p.word("times"), p.word("multiplied", "by"):
			op = "*"
		case p.op("/"), p.word("divided", "by"), p.word("over"):
			op = "/"
		case p.op("%"), p.word("mod"), p.word("modulo"):
			op = "%"
		default:
			return l, nil
		}
		r, err := p.power()
		if err != nil {
			p.pos = save
			return l, nil
		}
		l = bin(op, l, r)
	}
}

// power := unary [ (** | to the power of | raised to [the power of]) power ]
func (p *arithParser) power() (*node, error) {
	l, err := p.unary()
	if err != nil {
		return nil, err
	}
	save := p.pos
	if p.op("**") || p.word("to", "the", "power", "of") || p.word("raised", "to", "the", "power", "of") || p.word("raised", "to") {
		r, err := p.power()
		if err != nil {
			p.pos = save
			return l, nil
		}
		return bin("**", l, r), nil
	}
	return l, nil
}

// unary := (- | minus | negative) unary | postfix
func (p *arithParser) unary() (*node, error) {
	save := p.pos
	if p.op("-") || p.word("negative") || p.word("minus") {
		if p.depth++; p.depth > maxArithDepth {
			return nil, errNoParse
		}
		x, err := p.unary()
		p.depth--
		if err == nil {
			return &node{op: "neg", left: x}, nil
		}
		p.pos = save
		return nil, errNoParse
	}
	return p.postfix()
}

// postfix := primary { squared | cubed | percent [of power] }
func (p *arithParser) postfix() (*node, error) {
	x, err := p.primary()
	if err != nil {
		return nil, err
	}
	for {
		switch {
		case p.word("squared"):
			x = bin("**", x, num("2"))
		case p.word("cubed"):
			x = bin("**", x, num("3"))
		case p.word("percent"), p.op("%") && p.peek(0).kind == tWord && p.peek(0).text == "of":
			save := p.pos
			if p.word("of") {
				if y, err := p.power(); err == nil {
					x = bin("*", bin("/", x, num("100")), y)
					continue
				}
				p.pos = save
			}
			x = bin("/", x, num("100"))
		default:
			return x, nil
		}
	}
}

// functionWords are the calculate tool's one-argument functions a need may
// name, by the word used.
var functionWords = map[string]string{"sqrt": "sqrt", "abs": "abs", "round": "round", "floor": "floor",
	"ceil": "ceil", "ceiling": "ceil", "exp": "exp", "log": "log", "ln": "log", "sin": "sin", "cos": "cos",
	"tan": "tan", "sine": "sin", "cosine": "cos", "tangent": "tan"}

// primary := number | pi | ( expr ) | a verb form | an "of" form | a function
func (p *arithParser) primary() (*node, error) {
	if p.depth++; p.depth > maxArithDepth {
		return nil, errNoParse
	}
	defer func() { p.depth-- }()
	save := p.pos
	t := p.peek(0)
	switch {
	case t.kind == tNum:
		p.pos++
		return num(t.text), nil
	case t.kind == tWord && t.text == "pi":
		p.pos++
		return num("pi"), nil
	case t.kind == tLParen:
		p.pos++
		x, err := p.expr()
		if err == nil && p.peek(0).kind == tRParen {
			p.pos++
			return x, nil
		}
		p.pos = save
		return nil, errNoParse
	}
	if t.kind != tWord {
		return nil, errNoParse
	}
	p.anyWord("the")
	if x, ok := p.verbForm(); ok {
		return x, nil
	}
	p.pos = save
	p.anyWord("the")
	if x, ok := p.ofForm(); ok {
		return x, nil
	}
	p.pos = save
	p.anyWord("the")
	if x, ok := p.function(); ok {
		return x, nil
	}
	p.pos = save
	return nil, errNoParse
}

// verbForm reads "multiply A by B", "add A and B", "subtract A from B",
// "divide A by B", "raise A to (the power of) B", "square A", "cube A".
func (p *arithParser) verbForm() (*node, bool) {
	save := p.pos
	verb := p.peek(0).text
	p.pos++
	operands := func(joins ...string) (*node, *node, string, bool) {
		a, err := p.expr()
		if err != nil {
			return nil, nil, "", false
		}
		for _, j := range joins {
			if p.word(strings.Fields(j)...) {
				b, err := p.expr()
				if err != nil {
					return nil, nil, "", false
				}
				return a, b, j, true
			}
		}
		return nil, nil, "", false
	}
	switch verb {
	case "multiply":
		if a, b, _, ok := operands("by", "and", "with", "times"); ok {
			return bin("*", a, b), true
		}
	case "add":
		if a, b, _, ok := operands("and", "to", "plus", "with"); ok {
			return bin("+", a, b), true
		}
	case "subtract":
		if a, b, j, ok := operands("from", "and", "minus"); ok {
			if j == "from" {
				return bin("-", b, a), true
			}
			return bin("-", a, b), true
		}
	case "divide":
		if a, b, j, ok := operands("by", "over", "into", "and"); ok {
			if j == "into" {
				return bin("/", b, a), true
			}
			return bin("/", a, b), true
		}
	case "raise":
		if a, b, _, ok := operands("to the power of", "to"); ok {
			return bin("**", a, b), true
		}
	case "square", "cube":
		if p.word("root") {
			break
		}
		if a, err := p.power(); err == nil {
			e := "2"
			if verb == "cube" {
				e = "3"
			}
			return bin("**", a, num(e)), true
		}
	}
	p.pos = save
	return nil, false
}

// ofForm reads "sum of A and B (and C …)", "product of …", "difference
// between A and B", "quotient of A and B", "average of …", "remainder of A
// divided by B", "square root of A", "max/min of A and B".
func (p *arithParser) ofForm() (*node, bool) {
	save := p.pos
	head := p.peek(0).text
	p.pos++
	if head == "square" || head == "cube" {
		if !p.word("root") {
			p.pos = save
			return nil, false
		}
		head += " root"
	}
	if head == "absolute" && !p.word("value") {
		p.pos = save
		return nil, false
	}
	if !p.anyWord("of", "between") {
		p.pos = save
		return nil, false
	}
	list := func() []*node {
		var xs []*node
		for {
			x, err := p.term()
			if err != nil {
				break
			}
			xs = append(xs, x)
			s := p.pos
			if !(p.word("and") || p.peek(0).kind == tComma && p.skip()) {
				break
			}
			p.anyWord("and")
			if t := p.peek(0); t.kind != tNum && t.kind != tLParen && !(t.kind == tWord && (t.text == "pi" || functionWords[t.text] != "")) {
				p.pos = s
				break
			}
		}
		return xs
	}
	switch head {
	case "square root", "sqrt":
		if x, err := p.power(); err == nil {
			return fn("sqrt", x), true
		}
	case "cube root":
		if x, err := p.power(); err == nil {
			return bin("**", x, bin("/", num("1"), num("3"))), true
		}
	case "absolute":
		if x, err := p.power(); err == nil {
			return fn("abs", x), true
		}
	case "sum", "total":
		if xs := list(); len(xs) >= 2 {
			acc := xs[0]
			for _, x := range xs[1:] {
				acc = bin("+", acc, x)
			}
			return acc, true
		}
	case "product":
		if xs := list(); len(xs) >= 2 {
			acc := xs[0]
			for _, x := range xs[1:] {
				acc = bin("*", acc, x)
			}
			return acc, true
		}
	case "difference":
		if xs := list(); len(xs) == 2 {
			return bin("-", xs[0], xs[1]), true
		}
	case "quotient", "ratio":
		if xs := list(); len(xs) == 2 {
			return bin("/", xs[0], xs[1]), true
		}
	case "average", "mean":
		if xs := list(); len(xs) >= 2 {
			acc := xs[0]
			for _, x := range xs[1:] {
				acc = bin("+", acc, x)
			}
			return bin("/", acc, num(strconv.Itoa(len(xs)))), true
		}
	case "max", "maximum", "min", "minimum":
		if xs := list(); len(xs) >= 2 {
			return fn(head[:3], xs...), true
		}
	case "remainder":
		if a, err := p.power(); err == nil && (p.word("divided", "by") || p.anyWord("by", "and")) {
			if b, err := p.power(); err == nil {
				return bin("%", a, b), true
			}
		}
	}
	p.pos = save
	return nil, false
}

func (p *arithParser) skip() bool { p.pos++; return true }

// function reads "sqrt(A)", "sqrt of A", "log 100", "the sine of x".
func (p *arithParser) function() (*node, bool) {
	save := p.pos
	name, ok := functionWords[p.peek(0).text]
	if !ok {
		return nil, false
	}
	p.pos++
	p.anyWord("of")
	if x, err := p.power(); err == nil {
		return fn(name, x), true
	}
	p.pos = save
	return nil, false
}
