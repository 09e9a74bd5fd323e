package calculate

import (
	"fmt"
	"math"
	"math/big"
)

// bitsPerDigit is log2(10).
const bitsPerDigit = 3.3219280948873626

// checkInt refuses an integer over the digit limit.
func (p *parser) checkInt(i *big.Int) (value, error) {
	if float64(i.BitLen()) > float64(p.lim.MaxDigits)*bitsPerDigit+1 && len(i.String()) > p.lim.MaxDigits {
		return value{}, fmt.Errorf("%w: result has more than %d digits", ErrLimit, p.lim.MaxDigits)
	}
	return intV(i), nil
}

// checkFloat refuses an overflow (Python raises OverflowError).
func checkFloat(f float64, in ...float64) (value, error) {
	if math.IsInf(f, 0) {
		for _, x := range in {
			if math.IsInf(x, 0) {
				return floatV(f), nil
			}
		}
		return value{}, fmt.Errorf("%w: Numerical result out of range", ErrMath)
	}
	return floatV(f), nil
}

// arith applies a binary arithmetic operator with Python's semantics.
func (p *parser) arith(op string, a, b value) (value, error) {
	ai, aInt := a.asInt()
	bi, bInt := b.asInt()
	if aInt && bInt {
		return p.intArith(op, ai, bi)
	}
	x, y := a.asFloat(), b.asFloat()
	switch op {
	case "+":
		return checkFloat(x+y, x, y)
	case "-":
		return checkFloat(x-y, x, y)
	case "*":
		return checkFloat(x*y, x, y)
	case "/":
		if y == 0 {
			return value{}, fmt.Errorf("%w: division by zero", ErrMath)
		}
		return checkFloat(x/y, x, y)
	case "//":
		if y == 0 {
			return value{}, fmt.Errorf("%w: float floor division by zero", ErrMath)
		}
		return floatV(math.Floor(x / y)), nil
	case "%":
		if y == 0 {
			return value{}, fmt.Errorf("%w: float modulo", ErrMath)
		}
		m := math.Mod(x, y)
		if m != 0 && (m < 0) != (y < 0) {
			m += y
		}
		return floatV(m), nil
	case "**":
		if x == 0 && y < 0 {
			return value{}, fmt.Errorf("%w: 0.0 cannot be raised to a negative power", ErrMath)
		}
		if x < 0 && y != math.Trunc(y) {
			return value{}, fmt.Errorf("%w: negative number cannot be raised to a fractional power", ErrMath)
		}
		return checkFloat(math.Pow(x, y), x, y)
	}
	return value{}, fmt.Errorf("%w: Unsupported operator: %s", ErrUnsupported, op)
}

func (p *parser) intArith(op string, a, b *big.Int) (value, error) {
	maxBits := int(float64(p.lim.MaxDigits)*bitsPerDigit) + 2
	switch op {
	case "+":
		return p.checkInt(new(big.Int).Add(a, b))
	case "-":
		return p.checkInt(new(big.Int).Sub(a, b))
	case "*":
		if a.BitLen()+b.BitLen() > maxBits+1 && a.Sign() != 0 && b.Sign() != 0 {
			return value{}, fmt.Errorf("%w: result has more than %d digits", ErrLimit, p.lim.MaxDigits)
		}
		return p.checkInt(new(big.Int).Mul(a, b))
	case "/":
		if b.Sign() == 0 {
			return value{}, fmt.Errorf("%w: division by zero", ErrMath)
		}
		q, _ := new(big.Rat).SetFrac(a, b).Float64()
		return checkFloat(q)
	case "//", "%":
		if b.Sign() == 0 {
			return value{}, fmt.Errorf("%w: integer division or modulo by zero", ErrMath)
		}
		q, m := new(big.Int).DivMod(a, b, new(big.Int)) // Euclidean: 0 <= m < |b|
		if m.Sign() != 0 && b.Sign() < 0 {              // Python: the sign of the divisor
			m.Add(m, b)
			q.Add(q, big.NewInt(1))
		}
		if op == "//" {
			return intV(q), nil
		}
		return intV(m), nil
	case "**":
		if b.Sign() < 0 {
			x, y := intV(a).asFloat(), intV(b).asFloat()
			if x == 0 {
				return value{}, fmt.Errorf("%w: 0.0 cannot be raised to a negative power", ErrMath)
			}
			return checkFloat(math.Pow(x, y), x, y)
		}
		if !b.IsInt64() || b.Int64() > int64(p.lim.MaxExponent) {
			return value{}, fmt.Errorf("%w: exponent %s is over the limit (max: %d)", ErrLimit, shorten(b), p.lim.MaxExponent)
		}
		if abs := new(big.Int).Abs(a); abs.Cmp(big.NewInt(1)) > 0 && (abs.BitLen()-1)*int(b.Int64()) > maxBits {
			return value{}, fmt.Errorf("%w: result has more than %d digits", ErrLimit, p.lim.MaxDigits)
		}
		return p.checkInt(new(big.Int).Exp(a, b, nil))
	}
	return value{}, fmt.Errorf("%w: Unsupported operator: %s", ErrUnsupported, op)
}

func shorten(i *big.Int) string {
	s := i.String()
	if len(s) > 20 {
		return s[:20] + "…"
	}
	return s
}

type function struct {
	min, max int // argument count; max < 0: any
	f        func(p *parser, args []value) (value, error)
}

func unaryFloat(f func(float64) float64, domain func(float64) bool) function {
	return function{1, 1, func(_ *parser, a []value) (value, error) {
		x := a[0].asFloat()
		if domain != nil && !domain(x) {
			return value{}, fmt.Errorf("%w: math domain error", ErrMath)
		}
		return checkFloat(f(x), x)
	}}
}

func positive(x float64) bool { return x > 0 }

var functions map[string]function

func init() {
	functions = map[string]function{
		"abs": {1, 1, func(_ *parser, a []value) (value, error) {
			if i, ok := a[0].asInt(); ok {
				return intV(new(big.Int).Abs(i)), nil
			}
			return floatV(math.Abs(a[0].f)), nil
		}},
		"round": {1, 2, func(p *parser, a []value) (value, error) {
			if i, ok := a[0].asInt(); ok && len(a) == 1 {
				return intV(i), nil
			}
			x := a[0].asFloat()
			if len(a) == 1 {
				if math.IsInf(x, 0) || math.IsNaN(x) {
					return value{}, fmt.Errorf("%w: cannot convert float %s to integer", ErrMath, floatV(x))
				}
				bf := new(big.Float).SetFloat64(math.RoundToEven(x))
				i, _ := bf.Int(nil)
				return intV(i), nil
			}
			n, ok := a[1].asInt()
			if !ok || !n.IsInt64() || n.Int64() > 300 || n.Int64() < -300 {
				return value{}, fmt.Errorf("%w: round's ndigits must be a small integer", ErrMath)
			}
			s := math.Pow(10, float64(n.Int64()))
			return floatV(math.RoundToEven(x*s) / s), nil
		}},
		"min":   {1, -1, func(_ *parser, a []value) (value, error) { return pick(a, "<") }},
		"max":   {1, -1, func(_ *parser, a []value) (value, error) { return pick(a, ">") }},
		"sqrt":  unaryFloat(math.Sqrt, func(x float64) bool { return x >= 0 }),
		"sin":   unaryFloat(math.Sin, func(x float64) bool { return !math.IsInf(x, 0) }),
		"cos":   unaryFloat(math.Cos, func(x float64) bool { return !math.IsInf(x, 0) }),
		"tan":   unaryFloat(math.Tan, func(x float64) bool { return !math.IsInf(x, 0) }),
		"asin":  unaryFloat(math.Asin, func(x float64) bool { return x >= -1 && x <= 1 }),
		"acos":  unaryFloat(math.Acos, func(x float64) bool { return x >= -1 && x <= 1 }),
		"atan":  unaryFloat(math.Atan, nil),
		"log10": unaryFloat(math.Log10, positive),
		"log2":  unaryFloat(math.Log2, positive),
		"exp":   unaryFloat(math.Exp, nil),
		"log": {1, 2, func(_ *parser, a []value) (value, error) {
			x := a[0].asFloat()
			if x <= 0 {
				return value{}, fmt.Errorf("%w: math domain error", ErrMath)
			}
			if len(a) == 1 {
				return floatV(math.Log(x)), nil
			}
			base := a[1].asFloat()
			if base <= 0 || base == 1 {
				return value{}, fmt.Errorf("%w: math domain error", ErrMath)
			}
			return floatV(math.Log(x) / math.Log(base)), nil
		}},
		"floor": {1, 1, func(_ *parser, a []value) (value, error) { return toInt(a[0], math.Floor) }},
		"ceil":  {1, 1, func(_ *parser, a []value) (value, error) { return toInt(a[0], math.Ceil) }},
		"pow": {2, 2, func(p *parser, a []value) (value, error) {
			x, y := a[0].asFloat(), a[1].asFloat()
			return p.arith("**", floatV(x), floatV(y))
		}},
	}
}

func toInt(v value, f func(float64) float64) (value, error) {
	if i, ok := v.asInt(); ok {
		return intV(i), nil
	}
	if math.IsInf(v.f, 0) || math.IsNaN(v.f) {
		return value{}, fmt.Errorf("%w: cannot convert float %s to integer", ErrMath, v)
	}
	i, _ := new(big.Float).SetFloat64(f(v.f)).Int(nil)
	return intV(i), nil
}

func pick(a []value, op string) (value, error) {
	best := a[0]
	for _, v := range a[1:] {
		if compare(op, v, best) {
			best = v
		}
	}
	return best, nil
}

// call parses the arguments of a named function (positional only) and calls it.
func (p *parser) call(name string) (value, error) {
	p.next() // (
	var args []value
	for !p.isOp(")") {
		if p.peek().kind == tName && p.pos+1 < len(p.toks) && p.toks[p.pos+1].kind == tOp && p.toks[p.pos+1].text == "=" {
			return value{}, fmt.Errorf("%w: keyword arguments are not allowed", ErrUnsupported)
		}
		v, err := p.ternary()
		if err != nil {
			return value{}, err
		}
		args = append(args, v)
		if p.isOp(",") {
			p.next()
			continue
		}
		if !p.isOp(")") {
			return value{}, fmt.Errorf("%w: expected ',' or ')'", ErrSyntax)
		}
	}
	p.next()
	fn, ok := functions[name]
	if !ok {
		return value{}, fmt.Errorf("%w: Unknown function: %s", ErrUnsupported, name)
	}
	if len(args) < fn.min || fn.max >= 0 && len(args) > fn.max {
		return value{}, fmt.Errorf("%w: %s takes %s arguments, got %d", ErrSyntax, name, arity(fn), len(args))
	}
	return fn.f(p, args)
}

func arity(f function) string {
	switch {
	case f.max < 0:
		return fmt.Sprintf("at least %d", f.min)
	case f.min == f.max:
		return fmt.Sprint(f.min)
	}
	return fmt.Sprintf("%d to %d", f.min, f.max)
}
