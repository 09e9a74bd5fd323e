package calculate

// Calculate asks for the value of an arithmetic expression.
type Calculate struct {
	Expression string `doc:"a Python-style arithmetic expression: + - * / // % **, comparisons, a if c else b, abs round min max sqrt sin cos tan asin acos atan log log10 log2 exp floor ceil pow, pi e tau inf"`
}

// CalculateResult is the value of the expression, or why there is none.
type CalculateResult struct {
	Expression string `doc:"the expression evaluated"`
	Value      string `xml:",omitempty" doc:"the value (an integer, a float or True/False)"`
	Error      string `xml:",omitempty" doc:"why the expression was refused or failed"`
}
