package config

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

var (
	yamlLineRE    = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)
	unknownAnchor = regexp.MustCompile(`^unknown anchor '(.*)' referenced$`)
)

// syntaxError turns a yaml.v3 parse error into a located *Error.
//
// yaml.v3 reports lines inconsistently: scanner errors 1-based, parser
// errors ("did not find expected …") as the 0-based line of the enclosing
// construct, and errors on the first line, reader errors (control
// characters, bad UTF-8) and unknown anchors with no line at all. This
// corrects the first, and recovers the others from the input.
func syntaxError(name string, data []byte, err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
		if isParserError(msg) {
			line++
		}
	} else {
		line = locateUnlined(data, msg)
	}
	return &Error{Pos: Position{File: name, Line: line}, Msg: "invalid YAML: " + msg, Err: err}
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
