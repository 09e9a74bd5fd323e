package calculate

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode"
)

// Limits bound an evaluation.
type Limits struct {
	// MaxLength caps the expression's length in bytes.
	MaxLength int
	// MaxExponent caps the exponent of an integer power.
	MaxExponent int
	// MaxDigits caps the decimal digits of any integer result.
	MaxDigits int
}

// Default limits.
var DefaultLimits = Limits{MaxLength: 1000, MaxExponent: 10000, MaxDigits: 1000}

// Errors of evaluation; messages follow the reference's.
var (
	ErrSyntax      = errors.New("invalid syntax")
	ErrUnsupported = errors.New("unsupported")
	ErrLimit       = errors.New("over a limit")
	ErrMath        = errors.New("math error")
)

type kind uint8

const (
	kInt kind = iota
	kFloat
	kBool
)

// value is a Python number: an int (unbounded, but bounded here), a float or a bool.
type value struct {
	k kind
	i *big.Int
	f float64
	b bool
}

func intV(i *big.Int) value  { return value{k: kInt, i: i} }
func floatV(f float64) value { return value{k: kFloat, f: f} }
func boolV(b bool) value     { return value{k: kBool, b: b} }

// asInt returns an int or bool as a big.Int.
func (v value) asInt() (*big.Int, bool) {
	switch v.k {
	case kInt:
		return v.i, true
	case kBool:
		if v.b {
			return big.NewInt(1), true
		}
		return big.NewInt(0), true
	}
	return nil, false
}

func (v value) asFloat() float64 {
	switch v.k {
	case kFloat:
		return v.f
	case kBool:
		if v.b {
			return 1
		}
		return 0
	}
	f, _ := new(big.Float).SetInt(v.i).Float64()
	return f
}

// String formats v as Python's repr does (close enough for results).
func (v value) String() string {
	switch v.k {
	case kBool:
		if v.b {
			return "True"
		}
		return "False"
	case kInt:
		return v.i.String()
	}
	switch {
	case math.IsInf(v.f, 1):
		return "inf"
	case math.IsInf(v.f, -1):
		return "-inf"
	case math.IsNaN(v.f):
		return "nan"
	case v.f == math.Trunc(v.f) && math.Abs(v.f) < 1e16:
		return strconv.FormatFloat(v.f, 'f', 1, 64)
	}
	return strconv.FormatFloat(v.f, 'g', -1, 64)
}

// Eval evaluates expr within lim.
func Eval(expr string, lim Limits) (string, error) {
	if len(expr) > lim.MaxLength {
		return "", fmt.Errorf("%w: expression is %d bytes long (max: %d)", ErrLimit, len(expr), lim.MaxLength)
	}
	toks, err := lex(expr)
	if err != nil {
		return "", err
	}
	p := &parser{toks: toks, lim: lim}
	v, err := p.ternary()
	if err != nil {
		return "", err
	}
	if p.peek().kind != tEOF {
		return "", fmt.Errorf("%w: unexpected %q", ErrSyntax, p.peek().text)
	}
	return v.String(), nil
}

type tokKind uint8

const (
	tEOF tokKind = iota
	tNum
	tName
	tOp
	tStr
)

type token struct {
	kind tokKind
	text string
}

var ops = []string{"**", "//", "<=", ">=", "==", "!=", "<<", ">>", "+", "-", "*", "/", "%", "(", ")", ",", "<", ">", "&", "|", "^", "~", "[", "]", "@"}

func lex(s string) ([]token, error) {
	var out []token
	for i := 0; i < len(s); {
		c := rune(s[i])
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9':
			j := i
			for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '.' || s[j] == '_') {
				j++
			}
			if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
				k := j + 1
				if k < len(s) && (s[k] == '+' || s[k] == '-') {
					k++
				}
				if k < len(s) && s[k] >= '0' && s[k] <= '9' {
					j = k
					for j < len(s) && s[j] >= '0' && s[j] <= '9' {
						j++
					}
				}
			}
			out = append(out, token{tNum, s[i:j]})
			i = j
		case c == '_' || unicode.IsLetter(c) && c < unicode.MaxASCII:
			j := i
			for j < len(s) && (s[j] == '_' || s[j] < unicode.MaxASCII && (unicode.IsLetter(rune(s[j])) || unicode.IsDigit(rune(s[j])))) {
				j++
			}
			out = append(out, token{tName, s[i:j]})
			i = j
		case c == '"' || c == '\'':
			j := strings.IndexByte(s[i+1:], s[i])
			if j < 0 {
				return nil, fmt.Errorf("%w: unterminated string", ErrSyntax)
			}
			out = append(out, token{tStr, s[i : i+j+2]})
			i += j + 2
		default:
			matched := false
			for _, op := range ops {
				if strings.HasPrefix(s[i:], op) {
					out = append(out, token{tOp, op})
					i += len(op)
					matched = true
					break
				}
			}
			if !matched {
				return nil, fmt.Errorf("%w: unexpected character %q", ErrSyntax, s[i])
			}
		}
	}
	return append(out, token{kind: tEOF}), nil
}

const maxDepth = 100

type parser struct {
	toks  []token
	pos   int
	lim   Limits
	depth int
}

func (p *parser) peek() token { return p.toks[p.pos] }
func (p *parser) next() token { t := p.toks[p.pos]; p.pos++; return t }
func (p *parser) isOp(op string) bool {
	t := p.peek()
	return t.kind == tOp && t.text == op
}
func (p *parser) isName(n string) bool {
	t := p.peek()
	return t.kind == tName && t.text == n
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > maxDepth {
		return fmt.Errorf("%w: expression nested deeper than %d", ErrLimit, maxDepth)
	}
	return nil
}

// ternary: or_test ['if' or_test 'else' ternary]
func (p *parser) ternary() (value, error) {
	if err := p.enter(); err != nil {
		return value{}, err
	}
	defer func() { p.depth-- }()
	if p.isName("lambda") {
		return value{}, fmt.Errorf("%w: Unsupported operation: Lambda", ErrUnsupported)
	}
	a, err := p.boolOp()
	if err != nil {
		return value{}, err
	}
	if !p.isName("if") {
		return a, nil
	}
	p.next()
	c, err := p.boolOp()
	if err != nil {
		return value{}, err
	}
	if !p.isName("else") {
		return value{}, fmt.Errorf("%w: expected 'else'", ErrSyntax)
	}
	p.next()
	b, err := p.ternary()
	if err != nil {
		return value{}, err
	}
	if truthy(c) {
		return a, nil
	}
	return b, nil
}

func truthy(v value) bool {
	switch v.k {
	case kBool:
		return v.b
	case kInt:
		return v.i.Sign() != 0
	}
	return v.f != 0
}

// boolOp refuses and/or/not like the reference (BoolOp, Not unsupported).
func (p *parser) boolOp() (value, error) {
	if p.isName("not") {
		return value{}, fmt.Errorf("%w: Unsupported operator: Not", ErrUnsupported)
	}
	v, err := p.comparison()
	if err != nil {
		return value{}, err
	}
	if p.isName("and") || p.isName("or") {
		return value{}, fmt.Errorf("%w: Unsupported operation: BoolOp", ErrUnsupported)
	}
	return v, nil
}

var comparators = map[string]bool{"<": true, "<=": true, ">": true, ">=": true, "==": true, "!=": true}

// comparison: sum (cmp sum)*, chained as in Python.
func (p *parser) comparison() (value, error) {
	a, err := p.sum()
	if err != nil {
		return value{}, err
	}
	result := true
	chained := false
	for {
		t := p.peek()
		if t.kind == tName && (t.text == "in" || t.text == "is") {
			return value{}, fmt.Errorf("%w: Unsupported comparison: %s", ErrUnsupported, strings.ToUpper(t.text[:1])+t.text[1:])
		}
		if t.kind != tOp || !comparators[t.text] {
			break
		}
		p.next()
		b, err := p.sum()
		if err != nil {
			return value{}, err
		}
		chained = true
		result = result && compare(t.text, a, b)
		a = b
	}
	if chained {
		return boolV(result), nil
	}
	return a, nil
}

func compare(op string, a, b value) bool {
	var c int
	ai, aok := a.asInt()
	bi, bok := b.asInt()
	if aok && bok {
		c = ai.Cmp(bi)
	} else {
		x, y := a.asFloat(), b.asFloat()
		if math.IsNaN(x) || math.IsNaN(y) {
			return op == "!="
		}
		switch {
		case x < y:
			c = -1
		case x > y:
			c = 1
		}
	}
	switch op {
	case "<":
		return c < 0
	case "<=":
		return c <= 0
	case ">":
		return c > 0
	case ">=":
		return c >= 0
	case "==":
		return c == 0
	}
	return c != 0
}

func (p *parser) sum() (value, error) {
	a, err := p.term()
	if err != nil {
		return value{}, err
	}
	for p.isOp("+") || p.isOp("-") {
		op := p.next().text
		b, err := p.term()
		if err != nil {
			return value{}, err
		}
		if a, err = p.arith(op, a, b); err != nil {
			return value{}, err
		}
	}
	if t := p.peek(); t.kind == tOp && opName(t.text) != "" {
		return value{}, fmt.Errorf("%w: Unsupported operator: %s", ErrUnsupported, opName(t.text))
	}
	return a, nil
}

func opName(op string) string {
	return map[string]string{"<<": "LShift", ">>": "RShift", "&": "BitAnd", "|": "BitOr", "^": "BitXor", "@": "MatMult", "~": "Invert"}[op]
}

func (p *parser) term() (value, error) {
	a, err := p.unary()
	if err != nil {
		return value{}, err
	}
	for p.isOp("*") || p.isOp("/") || p.isOp("//") || p.isOp("%") {
		op := p.next().text
		b, err := p.unary()
		if err != nil {
			return value{}, err
		}
		if a, err = p.arith(op, a, b); err != nil {
			return value{}, err
		}
	}
	return a, nil
}

func (p *parser) unary() (value, error) {
	if p.isOp("~") {
		return value{}, fmt.Errorf("%w: Unsupported operator: Invert", ErrUnsupported)
	}
	if p.isOp("-") || p.isOp("+") {
		op := p.next().text
		if err := p.enter(); err != nil {
			return value{}, err
		}
		v, err := p.unary()
		p.depth--
		if err != nil || op == "+" {
			if err == nil && v.k == kBool {
				v, _ = p.arith("+", intV(big.NewInt(0)), v)
			}
			return v, err
		}
		return p.arith("-", intV(big.NewInt(0)), v)
	}
	return p.power()
}

// power: atom ['**' unary] (right-associative; binds tighter than a unary
// minus on its left).
func (p *parser) power() (value, error) {
	a, err := p.atom()
	if err != nil {
		return value{}, err
	}
	if !p.isOp("**") {
		return a, nil
	}
	p.next()
	if err := p.enter(); err != nil {
		return value{}, err
	}
	b, err := p.unary()
	p.depth--
	if err != nil {
		return value{}, err
	}
	return p.arith("**", a, b)
}

var constants = map[string]value{
	"pi": floatV(math.Pi), "e": floatV(math.E), "tau": floatV(2 * math.Pi), "inf": floatV(math.Inf(1)),
	"True": boolV(true), "False": boolV(false),
}

func (p *parser) atom() (value, error) {
	t := p.next()
	switch t.kind {
	case tNum:
		return parseNumber(t.text)
	case tStr:
		return value{}, fmt.Errorf("%w: Unsupported constant type: <class 'str'>", ErrUnsupported)
	case tName:
		if p.isOp("(") {
			return p.call(t.text)
		}
		if v, ok := constants[t.text]; ok {
			return v, nil
		}
		return value{}, fmt.Errorf("%w: Unknown variable: %s", ErrUnsupported, t.text)
	case tOp:
		if t.text == "(" {
			v, err := p.ternary()
			if err != nil {
				return value{}, err
			}
			if !p.isOp(")") {
				return value{}, fmt.Errorf("%w: expected ')'", ErrSyntax)
			}
			p.next()
			return v, nil
		}
		if t.text == "[" {
			return value{}, fmt.Errorf("%w: Unsupported operation: List", ErrUnsupported)
		}
	case tEOF:
		return value{}, fmt.Errorf("%w: unexpected end of expression", ErrSyntax)
	}
	return value{}, fmt.Errorf("%w: unexpected %q", ErrSyntax, t.text)
}

func parseNumber(s string) (value, error) {
	clean := strings.ReplaceAll(s, "_", "")
	if !strings.ContainsAny(clean, ".eE") {
		i, ok := new(big.Int).SetString(clean, 10)
		if !ok || (len(clean) > 1 && clean[0] == '0' && strings.Trim(clean, "0") != "") {
			return value{}, fmt.Errorf("%w: bad number %q", ErrSyntax, s)
		}
		return intV(i), nil
	}
	f, err := strconv.ParseFloat(clean, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return value{}, fmt.Errorf("%w: bad number %q", ErrSyntax, s)
	}
	return floatV(f), nil
}
