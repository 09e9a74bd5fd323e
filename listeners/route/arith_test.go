package route

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/listeners/tools/calculate"
)

func TestArithmetic(t *testing.T) {
	for _, tc := range []struct{ need, expr, value string }{
		{"I need to multiply six by seven", "6*7", "42"},
		{"multiply 6 by 7", "6*7", "42"},
		{"what is six times seven?", "6*7", "42"},
		{"what is 6*7", "6*7", "42"},
		{"what's (2+3)*4?", "(2+3)*4", "20"},
		{"forty two divided by six", "42/6", "7.0"},
		{"subtract five from twenty", "20-5", "15"},
		{"add 2 and 3, then multiply by 4", "(2+3)*4", "20"},
		{"add two and three and then multiply the result by four", "(2+3)*4", "20"},
		{"the sum of 1, 2 and 3", "1+2+3", "6"},
		{"the product of four and five", "4*5", "20"},
		{"the difference between ten and four", "10-4", "6"},
		{"the average of 2 and 4", "(2+4)/2", "3.0"},
		{"square root of 16 plus 2 to the power of 3", "sqrt(16)+2**3", "12.0"},
		{"two to the power of ten", "2**10", "1024"},
		{"2^10", "2**10", "1024"},
		{"raise 3 to the power of 4", "3**4", "81"},
		{"five squared", "5**2", "25"},
		{"one hundred and five minus twenty-one", "105-21", "84"},
		{"two thousand three hundred plus a dozen", "2300+12", "2312"},
		{"ten percent of 250", "10/100*250", "25.0"},
		{"negative three times four", "-3*4", "-12"},
		{"10 - (4 - 1)", "10-(4-1)", "7"},
		{"what is 10 minus 4 minus 1", "10-4-1", "5"},
		{"divide 12 by 4", "12/4", "3.0"},
		{"the remainder of 17 divided by 5", "17%5", "2"},
		{"three point one four times two", "3.14*2", "6.28"},
		{"calculate 42", "42", "42"},
		{"the max of 3 and 9", "max(3,9)", "9"},
		{"multiply 2 plus 3 by 4", "(2+3)*4", "20"},
		{"what is 0.5 * 8", "0.5*8", "4.0"},
	} {
		got, err := Arithmetic(tc.need)
		if err != nil {
			t.Errorf("Arithmetic(%q): %v", tc.need, err)
			continue
		}
		if got != tc.expr {
			t.Errorf("Arithmetic(%q) = %q, want %q", tc.need, got, tc.expr)
			continue
		}
		v, err := calculate.Eval(got, calculate.DefaultLimits)
		if err != nil || v != tc.value {
			t.Errorf("calculate(%q) = %q, %v; want %s", got, v, err, tc.value)
		}
	}
}

func TestArithmeticRefuses(t *testing.T) {
	for _, tc := range []struct {
		need string
		want error
		says string
	}{
		{need: "", want: ErrNoArithmetic},
		{need: "read the notes file", want: ErrNoArithmetic},
		{need: "say hello to Dan", want: ErrNoArithmetic},
		{need: "multiply 6 by 7 for my 3 kids", want: ErrNoArithmetic, // a number outside the arithmetic
			says: `the arithmetic 6*7 leaves out (3): say which are meant`},
		{need: "add", want: ErrNoArithmetic},
		// An operation without its numbers is incomplete, not the one
		// number it has.
		{need: "multiply six by", want: ErrIncompleteArithmetic, says: `multiply needs a second number after "by"`},
		{need: "add 2 and", want: ErrIncompleteArithmetic, says: `add needs a second number after "and"`},
		{need: "please subtract 4", want: ErrIncompleteArithmetic, says: "subtract needs a second number"},
		{need: "what is 2 plus", want: ErrIncompleteArithmetic, says: "plus needs a number after it"},
		{need: "6 *", want: ErrIncompleteArithmetic, says: "* needs a number after it"},
		{need: "the sum of 2", want: ErrIncompleteArithmetic, says: "the sum of needs a second number"},
		{need: "then add 2", want: ErrIncompleteArithmetic, says: "add needs a second number"},
		// A need that ends on a joining word lacks the number it joins.
		{need: "calculate 42 and", want: ErrIncompleteArithmetic, says: `"and" needs a number after it`},
		{need: "what is 6 times 7 and,", want: ErrIncompleteArithmetic, says: `"and" needs a number after it`},
		{need: "compute 12 by", want: ErrIncompleteArithmetic, says: `"by" needs a number after it`},
	} {
		got, err := Arithmetic(tc.need)
		if !errors.Is(err, tc.want) || !strings.Contains(fmt.Sprint(err), tc.says) {
			t.Errorf("Arithmetic(%q) = %q, %v; want %v saying %q", tc.need, got, err, tc.want, tc.says)
		}
	}
}

// TestArithmeticExponents: a number in exponent notation is one number,
// as the calculate tool reads it, not a number, a word and another number.
func TestArithmeticExponents(t *testing.T) {
	for _, tc := range []struct{ need, expr string }{
		{"multiply 1e308 by 1e308", "1e308*1e308"},
		{"what is 1.5e3 times 2", "1.5e3*2"},
		{"divide 3E-2 by 3", "3E-2/3"},
		{"add 2e+3 and 007", "2e+3+7"},
		{"multiply 0e5 by 2", "0e5*2"},
		{"multiply 6 by 7 - quickly", "6*7"},
	} {
		got, err := Arithmetic(tc.need)
		if err != nil || got != tc.expr {
			t.Errorf("Arithmetic(%q) = %q, %v; want %q", tc.need, got, err, tc.expr)
			continue
		}
		if _, err := calculate.Eval(got, calculate.DefaultLimits); errors.Is(err, calculate.ErrSyntax) {
			t.Errorf("calculate cannot parse %q: %v", got, err)
		}
	}
}
