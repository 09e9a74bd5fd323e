package config

import (
	"bytes"
	"errors"
	"io"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

var (
	yamlLineRE    = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)
	unknownAnchor = regexp.MustCompile(`^unknown anchor '(.*)' referenced$`)
)

// syntaxError turns a yaml.v3 parse error into a located *Error.
//
// yaml.v3 reports lines inconsistently: scanner errors 1-based, parser
// errors ("did not find expected …") as the 0-based line where the
// enclosing construct began (a listeners: sequence many lines above the
// broken one), and errors on the first line, reader errors (control
// characters, bad UTF-8) and unknown anchors with no line at all. This
// finds the broken line of the second, and recovers the others from the
// input.
func syntaxError(name string, data []byte, err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
		if isParserError(msg) {
			line = problemLine(data, err, line+1)
		}
	} else {
		line = locateUnlined(data, msg)
	}
	if tabIndented(data, line) {
		msg += " (the line is indented with a tab: YAML indents with spaces)"
	}
	return &Error{Pos: Position{File: name, Line: line}, Msg: "invalid YAML: " + msg, Err: err}
}

// tabIndented reports whether the 1-based line of data has a tab in its
// indentation (before its first other character): YAML refuses tabs
// there, and its error does not say so.
func tabIndented(data []byte, line int) bool {
	if line < 1 {
		return false
	}
	lines := bytes.SplitN(data, []byte("\n"), line+1)
	if len(lines) < line {
		return false
	}
	indent := bytes.TrimLeft(lines[line-1], " \t")
	return bytes.IndexByte(lines[line-1][:len(lines[line-1])-len(indent)], '\t') >= 0
}

// problemLine is the line a yaml.v3 parser error err was raised at, at or
// after from (the 1-based line yaml.v3 names: where the enclosing construct
// began). The parser stops at the token that breaks the construct, so the
// first lines of data up to and including that token's fail with err
// exactly, and fewer lines do not: the shortest such prefix ends at the
// broken line. from when no prefix reproduces err.
func problemLine(data []byte, err error, from int) int {
	var ends []int // ends[i]: the offset just past line i+1
	for i, b := range data {
		if b == '\n' {
			ends = append(ends, i+1)
		}
	}
	if len(ends) == 0 || ends[len(ends)-1] != len(data) {
		ends = append(ends, len(data))
	}
	want := err.Error()
	fails := func(line int) bool { return decodeErr(data[:ends[line-1]]) == want }
	lo, hi := max(from, 1), len(ends)
	if lo > hi || !fails(hi) {
		return from
	}
	for lo < hi {
		mid := lo + (hi-lo)/2
		if fails(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// decodeErr is the text of the first error decoding every YAML document
// of data, as Parse decodes them; "" when there is none.
func decodeErr(data []byte) (text string) {
	defer func() {
		if r := recover(); r != nil {
			text = "" // a prefix the library cannot parse reproduces nothing
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			if errors.Is(err, io.EOF) {
				return ""
			}
			return err.Error()
		}
	}
}

// isParserError reports whether msg comes from yaml.v3's parser (as opposed
// to its scanner).
func isParserError(msg string) bool {
	for _, p := range []string{"did not find expected", "found undefined tag handle", "found duplicate %", "found incompatible YAML document"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// locateUnlined finds the line of an error yaml.v3 reported without one;
// 0 when it cannot tell.
func locateUnlined(data []byte, msg string) int {
	if m := unknownAnchor.FindStringSubmatch(msg); m != nil {
		re := regexp.MustCompile(`\*` + regexp.QuoteMeta(m[1]) + `(?:[\s,\]}]|$)`)
		if loc := re.FindIndex(data); loc != nil {
			return lineAt(data, loc[0])
		}
		return 0
	}
	if strings.Contains(msg, "UTF-8") || strings.Contains(msg, "Unicode") || strings.HasPrefix(msg, "control characters") {
		if off := firstInvalid(data); off >= 0 {
			return lineAt(data, off)
		}
		return 0
	}
	if strings.Contains(msg, "UTF-16") || strings.HasPrefix(msg, "input error") ||
		strings.Contains(msg, "alias") || strings.HasPrefix(msg, "attempted") {
		return 0
	}
	// A scanner or parser error whose mark was on the first line (yaml.v3
	// omits line 0).
	return 1
}

// firstInvalid returns the offset of the first byte YAML does not accept
// (invalid UTF-8 or a control character), or -1.
func firstInvalid(data []byte) int {
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size <= 1 {
			return i
		}
		if !yamlPrintable(r) {
			return i
		}
		i += size
	}
	return -1
}

// yamlPrintable mirrors the YAML 1.2 c-printable production.
func yamlPrintable(r rune) bool {
	switch {
	case r == 0x09, r == 0x0A, r == 0x0D, r >= 0x20 && r <= 0x7E, r == 0x85:
		return true
	case r >= 0xA0 && r <= 0xD7FF, r >= 0xE000 && r <= 0xFFFD && r != 0xFEFF, r >= 0x10000 && r <= 0x10FFFF:
		return true
	}
	return r == 0xFEFF
}

// lineAt is the 1-based line of offset off.
func lineAt(data []byte, off int) int {
	return bytes.Count(data[:off], []byte{'\n'}) + 1
}
