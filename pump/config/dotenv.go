package config

import (
	"errors"
	"io/fs"
	"os"
	"strings"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/regfile"
)

// LoadDotEnv reads KEY=VALUE lines from the file at path into the process
// environment, like python-dotenv's load_dotenv: blank lines and # comments
// are skipped, an "export " prefix is allowed, values may be single-quoted
// (literal), double-quoted (with \n, \t, \" … escapes) or bare (a " #"
// starts a comment), quoted values may span lines, and ${VAR} or
// ${VAR:-default} in bare and double-quoted values expand from the
// environment, then from earlier lines of the file. A variable that is
// already set is never overridden. A missing file is not an error. Lines
// that cannot be parsed are reported (with file:line, wrapping ErrConfig)
// after every valid line has been applied.
func LoadDotEnv(path string) error {
	data, err := regfile.Read(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		msg := err.Error()
		if pe, ok := errors.AsType[*fs.PathError](err); ok {
			msg = pe.Err.Error()
		}
		return &Error{Pos: Position{File: path}, Msg: msg, Err: err}
	}
	vars, errs := parseDotEnv(path, string(data), os.LookupEnv)
	for _, v := range vars {
		if _, set := os.LookupEnv(v.key); set {
			continue
		}
		if err := os.Setenv(v.key, v.value); err != nil {
			errs = append(errs, &Error{Pos: Position{File: path, Line: v.line}, Msg: "cannot set " + v.key, Err: err})
		}
	}
	return joinErrors(errs)
}

// envVar is one assignment read from a .env file.
type envVar struct {
	key, value string
	line       int
}

// dotenvParser walks a .env file.
type dotenvParser struct {
	file   string
	src    string
	i      int
	line   int
	lookup func(string) (string, bool)
	vars   []envVar
	errs   []*Error
}

// parseDotEnv returns the assignments of a .env file in order, and the
// problems of the lines it skipped. lookup reads the environment.
func parseDotEnv(file, src string, lookup func(string) (string, bool)) ([]envVar, []*Error) {
	p := &dotenvParser{file: file, src: strings.ReplaceAll(src, "\r\n", "\n"), line: 1, lookup: lookup}
	p.src = strings.TrimPrefix(p.src, "\ufeff")
	for p.i < len(p.src) {
		p.statement()
	}
	return p.vars, p.errs
}

func (p *dotenvParser) fail(line int, msg string) {
	p.errs = append(p.errs, &Error{Pos: Position{File: p.file, Line: line}, Msg: msg})
}

// restOfLine returns the text up to the end of the current line and moves
// past the newline.
func (p *dotenvParser) restOfLine() string {
	end := strings.IndexByte(p.src[p.i:], '\n')
	var s string
	if end < 0 {
		s, p.i = p.src[p.i:], len(p.src)
	} else {
		s, p.i = p.src[p.i:p.i+end], p.i+end+1
	}
	p.line++
	return s
}

func (p *dotenvParser) skipBlanks() {
	for p.i < len(p.src) && (p.src[p.i] == ' ' || p.src[p.i] == '\t') {
		p.i++
	}
}

// statement parses one line (or one multi-line quoted assignment).
func (p *dotenvParser) statement() {
	start := p.line
	p.skipBlanks()
	if p.i >= len(p.src) {
		return
	}
	if c := p.src[p.i]; c == '\n' || c == '#' {
		p.restOfLine()
		return
	}
	if rest, ok := strings.CutPrefix(p.src[p.i:], "export"); ok && rest != "" && (rest[0] == ' ' || rest[0] == '\t') {
		p.i += len("export")
		p.skipBlanks()
	}
	eq := strings.IndexAny(p.src[p.i:], "=\n")
	if eq < 0 || p.src[p.i+eq] == '\n' {
		// A bare KEY without "=" has no value: python-dotenv skips it.
		if key := strings.TrimSpace(p.restOfLine()); !validEnvKey(key) {
			p.fail(start, "cannot parse line (want KEY=VALUE)")
		}
		return
	}
	key := strings.TrimSpace(p.src[p.i : p.i+eq])
	if !validEnvKey(key) {
		p.restOfLine()
		p.fail(start, "invalid variable name "+quoteShort(key))
		return
	}
	p.i += eq + 1
	p.skipBlanks()
	var value string
	var ok bool
	switch {
	case p.i < len(p.src) && p.src[p.i] == '\'':
		value, ok = p.quoted('\'')
	case p.i < len(p.src) && p.src[p.i] == '"':
		value, ok = p.quoted('"')
		if ok {
			value = p.expand(value)
		}
	default:
		value, ok = p.bare(), true
		value = p.expand(value)
	}
	if !ok {
		p.fail(start, "cannot parse value of "+key)
		return
	}
	p.vars = append(p.vars, envVar{key: key, value: value, line: start})
}

// quoted reads a quoted value starting at the opening quote, then the rest
// of its line, which may hold only a comment.
func (p *dotenvParser) quoted(q byte) (string, bool) {
	var b strings.Builder
	p.i++
	for p.i < len(p.src) {
		c := p.src[p.i]
		switch {
		case c == q:
			p.i++
			tail := strings.TrimSpace(p.restOfLine())
			return b.String(), tail == "" || tail[0] == '#'
		case c == '\\' && p.i+1 < len(p.src):
			n := p.src[p.i+1]
			if r, ok := unescape(q, n); ok {
				b.WriteString(r)
				p.i += 2
				continue
			}
			b.WriteByte(c)
			p.i++
		default:
			if c == '\n' {
				p.line++
			}
			b.WriteByte(c)
			p.i++
		}
	}
	return "", false // unterminated
}

// unescape decodes the escape \n inside a value quoted with q.
func unescape(q, n byte) (string, bool) {
	if q == '\'' {
		if n == '\'' || n == '\\' {
			return string(n), true
		}
		return "", false
	}
	switch n {
	case '\\', '\'', '"':
		return string(n), true
	case 'a':
		return "\a", true
	case 'b':
		return "\b", true
	case 'f':
		return "\f", true
	case 'n':
		return "\n", true
	case 'r':
		return "\r", true
	case 't':
		return "\t", true
	case 'v':
		return "\v", true
	}
	return "", false
}

// bare reads an unquoted value: the rest of the line up to a " #" comment.
func (p *dotenvParser) bare() string {
	s := p.restOfLine()
	for i := 1; i < len(s); i++ {
		if s[i] == '#' && (s[i-1] == ' ' || s[i-1] == '\t') {
			s = s[:i]
			break
		}
	}
	return strings.TrimSpace(s)
}

// expand replaces ${VAR} and ${VAR:-default}.
func (p *dotenvParser) expand(s string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		name, def, _ := strings.Cut(s[i+2:i+j], ":-")
		b.WriteString(p.resolveVar(name, def))
		s = s[i+j+1:]
	}
}

// resolveVar looks a name up in the environment, then in earlier lines.
func (p *dotenvParser) resolveVar(name, def string) string {
	if v, ok := p.lookup(name); ok && v != "" {
		return v
	}
	for k := len(p.vars) - 1; k >= 0; k-- {
		if p.vars[k].key == name && p.vars[k].value != "" {
			return p.vars[k].value
		}
	}
	return def
}

// validEnvKey accepts names without whitespace, "=", quotes or "#".
func validEnvKey(k string) bool {
	return k != "" && !strings.ContainsAny(k, " \t\n\r=#'\"$")
}

func quoteShort(s string) string {
	if len(s) > 40 {
		s = s[:37] + "..."
	}
	return `"` + s + `"`
}
