package calculate

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/listeners/tools"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

func TestEval(t *testing.T) {
	tests := []struct{ expr, want string }{
		{"1 + 2 * 3", "7"},
		{"(1 + 2) * 3", "9"},
		{"7 / 2", "3.5"},
		{"7 // 2", "3"},
		{"-7 // 2", "-4"},
		{"-7 % 3", "2"},
		{"7 % -3", "-2"},
		{"7.5 % 2", "1.5"},
		{"2 ** 10", "1024"},
		{"-2 ** 2", "-4"},
		{"2 ** -1", "0.5"},
		{"2 ** 3 ** 2", "512"},
		{"2 ** 100", "1267650600228229401496703205376"},
		{"0.1 + 0.2", "0.30000000000000004"},
		{"1 < 2 < 3", "True"},
		{"1 < 3 < 2", "False"},
		{"3 == 3.0", "True"},
		{"1 if 2 > 1 else 0", "1"},
		{"1 if 0 else 2", "2"},
		{"sqrt(16)", "4.0"},
		{"abs(-5)", "5"},
		{"round(2.5)", "2"},
		{"round(3.14159, 2)", "3.14"},
		{"min(3, 1, 2)", "1"},
		{"max(3, 1.5)", "3"},
		{"floor(-1.5)", "-2"},
		{"ceil(1.2)", "2"},
		{"log(8, 2)", "3.0"},
		{"log10(1000)", "3.0"},
		{"pow(2, 3)", "8.0"},
		{"pi", "3.141592653589793"},
		{"tau / 2 == pi", "True"},
		{"inf > 10 ** 100", "True"},
		{"True + 1", "2"},
		{"1e3", "1000.0"},
		{"1_000 * 2", "2000"},
	}
	for _, tc := range tests {
		got, err := Eval(tc.expr, DefaultLimits)
		if err != nil || got != tc.want {
			t.Errorf("%s = %q, %v; want %q", tc.expr, got, err, tc.want)
		}
	}
}

func TestEvalRefusals(t *testing.T) {
	lim := Limits{MaxLength: 50, MaxExponent: 1000, MaxDigits: 100}
	tests := []struct {
		expr string
		err  error
		msg  string
	}{
		{"2 ** 1001", ErrLimit, "exponent 1001 is over the limit"},
		{"9 ** 999", ErrLimit, "more than 100 digits"},
		{"10 ** 99 * 10 ** 99", ErrLimit, "more than 100 digits"},
		{strings.Repeat("1+", 30) + "1", ErrLimit, "max: 50"},
		{"1 / 0", ErrMath, "division by zero"},
		{"5 // 0", ErrMath, "by zero"},
		{"sqrt(-1)", ErrMath, "math domain error"},
		{"log(0)", ErrMath, "math domain error"},
		{"10.0 ** 400", ErrMath, "out of range"},
		{"x + 1", ErrUnsupported, "Unknown variable: x"},
		{"f(1)", ErrUnsupported, "Unknown function: f"},
		{"'a'", ErrUnsupported, "Unsupported constant type"},
		{"1 and 2", ErrUnsupported, "BoolOp"},
		{"not 1", ErrUnsupported, "Not"},
		{"1 & 2", ErrUnsupported, "BitAnd"},
		{"1 in 2", ErrUnsupported, "Unsupported comparison: In"},
		{"1 +", ErrSyntax, "unexpected end"},
		{"(1", ErrSyntax, "expected ')'"},
		{"1 $ 2", ErrSyntax, "unexpected character"},
		{"sqrt(1, 2)", ErrSyntax, "takes 1 arguments"},
	}
	for _, tc := range tests {
		_, err := Eval(tc.expr, lim)
		if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: err = %v, want %v containing %q", tc.expr, err, tc.err, tc.msg)
		}
	}
	// Nesting deeper than the parser allows is refused, not a stack overflow.
	if _, err := Eval(strings.Repeat("(", 5000)+"1"+strings.Repeat(")", 5000), Limits{MaxLength: 20000, MaxExponent: 10, MaxDigits: 10}); !errors.Is(err, ErrLimit) {
		t.Errorf("deep nesting: err = %v", err)
	}
	if _, err := Eval(strings.Repeat("-", 5000)+"1", Limits{MaxLength: 20000, MaxExponent: 10, MaxDigits: 10}); !errors.Is(err, ErrLimit) {
		t.Errorf("deep unary: err = %v", err)
	}
}

func TestToolAnswersAsData(t *testing.T) {
	tool := &Tool{Policy: tools.PolicyFunc(func(caller, tool string) tools.Config {
		if caller == "strict" {
			return tools.Config{MaxExponent: 2}
		}
		return tools.Config{}
	})}
	ans := func(from, expr string) *CalculateResult {
		t.Helper()
		resp, err := tool.Handle(context.Background(), &Calculate{Expression: expr}, xmlpipe.Metadata{From: from})
		if err != nil {
			t.Fatal(err)
		}
		return resp.(*xmlpipe.RespondResponse).Payload.(*CalculateResult)
	}
	if r := ans("agent", "2 ** 10"); r.Value != "1024" || r.Error != "" {
		t.Fatalf("%+v", r)
	}
	if r := ans("strict", "2 ** 10"); r.Value != "" || !strings.Contains(r.Error, "exponent 10 is over the limit (max: 2)") {
		t.Fatalf("%+v", r)
	}
}

func FuzzEval(f *testing.F) {
	for _, s := range []string{"1+2", "2**10**10", "((((1))))", "max(1,2,3)", "1 if 2 else 3", "-" + "-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = Eval(s, DefaultLimits)
	})
}
