package codec

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"time"

	"github.com/xml-pipeline/xmlpipe/gen"
)

// The XSD lexical forms of special float values.
const (
	lexInf    = "INF"
	lexNegInf = "-INF"
	lexNaN    = "NaN"
)

// maxZoneOffset is the largest time-zone offset xs:dateTime allows (±14:00).
const maxZoneOffset = 14 * 60 * 60

// base64Std decodes standard base64 and rejects non-zero padding bits, as
// xs:base64Binary does.
var base64Std = base64.StdEncoding.Strict()

var (
	errSyntax   = errors.New("invalid lexical form")
	errRange    = errors.New("value out of range for the Go type")
	errEnum     = errors.New("value is not one of the enumeration")
	errTimeSpan = errors.New("year outside 0001-9999 or zone offset beyond ±14:00")
)

// appendFloat appends f in a valid xs:double / xs:float lexical form: INF,
// -INF, NaN, else the shortest decimal that round-trips at bits precision
// (plain notation for magnitudes in [1e-6, 1e21), exponent notation outside).
func appendFloat(dst []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, lexNaN...)
	case math.IsInf(f, 1):
		return append(dst, lexInf...)
	case math.IsInf(f, -1):
		return append(dst, lexNegInf...)
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	return strconv.AppendFloat(dst, f, format, -1, bits)
}

// appendTime appends t as RFC 3339 (with nanoseconds when non-zero). A zone
// offset xs:dateTime cannot carry (beyond ±14:00, or with seconds, as old
// local-mean-time zones have) is written as the same instant in UTC; a year
// outside 0001-9999 is an error.
func appendTime(dst []byte, t time.Time) ([]byte, error) {
	if _, off := t.Zone(); off%60 != 0 || off > maxZoneOffset || off < -maxZoneOffset {
		t = t.UTC()
	}
	if y := t.Year(); y < 1 || y > 9999 {
		return dst, errTimeSpan
	}
	return t.AppendFormat(dst, time.RFC3339Nano), nil
}

// checkTime rejects decoded times xs:dateTime (XSD 1.0, as libxml2 implements
// it) does not allow: years outside 0001-9999, offsets beyond ±14:00.
func checkTime(t time.Time) error {
	_, off := t.Zone()
	if y := t.Year(); y < 1 || y > 9999 || off > maxZoneOffset || off < -maxZoneOffset {
		return errTimeSpan
	}
	return nil
}

// enumHas reports whether s is allowed by the enumeration (empty = any value).
func enumHas(enum []string, s string) bool {
	if len(enum) == 0 {
		return true
	}
	return slices.Contains(enum, s)
}

// enumHasBytes is enumHas for decoded text, without converting it to a string.
func enumHasBytes(enum []string, b []byte) bool {
	if len(enum) == 0 {
		return true
	}
	for _, e := range enum {
		if e == string(b) {
			return true
		}
	}
	return false
}

// isXMLSpace reports the four XML whitespace characters.
func isXMLSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// collapse trims XML whitespace at both ends (the collapse facet of every
// non-string XSD built-in type we use; inner whitespace is invalid anyway).
func collapse(b []byte) []byte {
	for len(b) > 0 && isXMLSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isXMLSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

// parseInteger parses the xs:integer lexical form [+-]?[0-9]+ into a magnitude
// and sign. ok is false for a syntax error or a magnitude beyond uint64.
func parseInteger(b []byte) (mag uint64, neg, ok bool) {
	if len(b) > 0 && (b[0] == '+' || b[0] == '-') {
		neg = b[0] == '-'
		b = b[1:]
	}
	if len(b) == 0 {
		return 0, false, false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false, false
		}
		d := uint64(c - '0')
		if mag > (math.MaxUint64-d)/10 {
			return 0, false, false
		}
		mag = mag*10 + d
	}
	return mag, neg, true
}

// setInt parses a signed integer kind into v, checking the Go type's range.
func setInt(v reflect.Value, b []byte, bits int) error {
	mag, neg, ok := parseInteger(b)
	if !ok {
		if isDigits(b) {
			return errRange
		}
		return errSyntax
	}
	limit := uint64(1) << (bits - 1) // |min|
	if neg {
		if mag > limit {
			return errRange
		}
		v.SetInt(int64(-mag))
		return nil
	}
	if mag > limit-1 {
		return errRange
	}
	v.SetInt(int64(mag))
	return nil
}

// setUint parses an unsigned integer kind into v; "-0" is zero, as in XSD.
func setUint(v reflect.Value, b []byte, bits int) error {
	mag, neg, ok := parseInteger(b)
	if !ok {
		if isDigits(b) {
			return errRange
		}
		return errSyntax
	}
	if neg && mag != 0 {
		return errRange
	}
	if bits < 64 && mag >= uint64(1)<<bits {
		return errRange
	}
	v.SetUint(mag)
	return nil
}

// isDigits reports a well-formed integer (optionally signed) that failed only
// because of its size.
func isDigits(b []byte) bool {
	if len(b) > 0 && (b[0] == '+' || b[0] == '-') {
		b = b[1:]
	}
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// isDecimalFloat checks the numeric part of the xs:double lexical form:
// [+-]? (digits (. digits?)? | . digits) ([eE] [+-]? digits)?
func isDecimalFloat(b []byte) bool {
	i := 0
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		i++
	}
	intDigits := 0
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
		intDigits++
	}
	fracDigits := 0
	if i < len(b) && b[i] == '.' {
		i++
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
			fracDigits++
		}
	}
	if intDigits+fracDigits == 0 {
		return false
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		expDigits := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
			expDigits++
		}
		if expDigits == 0 {
			return false
		}
	}
	return i == len(b)
}

// setFloat parses an xs:double / xs:float value into v. A finite literal whose
// value overflows the Go type is an error.
func setFloat(v reflect.Value, b []byte, bits int) error {
	switch string(b) {
	case lexInf, "+INF":
		v.SetFloat(math.Inf(1))
		return nil
	case lexNegInf:
		v.SetFloat(math.Inf(-1))
		return nil
	case lexNaN:
		v.SetFloat(math.NaN())
		return nil
	}
	if !isDecimalFloat(b) {
		return errSyntax
	}
	f, err := strconv.ParseFloat(string(b), bits)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) && math.IsInf(f, 0) {
			return errRange
		}
		if !errors.Is(err, strconv.ErrRange) {
			return errSyntax
		}
	}
	v.SetFloat(f)
	return nil
}

// setBool parses xs:boolean (true, false, 1, 0).
func setBool(v reflect.Value, b []byte) error {
	switch string(b) {
	case "true", "1":
		v.SetBool(true)
	case "false", "0":
		v.SetBool(false)
	default:
		return errSyntax
	}
	return nil
}

// dateTimeLayouts are the xs:dateTime forms: with a zone, and without (read as UTC).
// Fractional seconds are accepted after the seconds by time.Parse.
var dateTimeLayouts = [...]string{"2006-01-02T15:04:05Z07:00", "2006-01-02T15:04:05"}

// setTime parses xs:dateTime into a time.Time value.
func setTime(v reflect.Value, b []byte) error {
	s := string(b)
	var lastErr error
	for _, layout := range dateTimeLayouts {
		t, err := time.Parse(layout, s)
		if err != nil {
			lastErr = err
			continue
		}
		if err := checkTime(t); err != nil {
			return err
		}
		v.Set(reflect.ValueOf(t))
		return nil
	}
	return fmt.Errorf("%w: %w", errSyntax, lastErr)
}

// setBytes decodes xs:base64Binary (whitespace anywhere is ignored); an empty
// value decodes to a nil slice.
func setBytes(v reflect.Value, b []byte) error {
	if len(b) == 0 {
		v.SetZero()
		return nil
	}
	clean := b
	if slices.ContainsFunc(b, isXMLSpace) {
		clean = make([]byte, 0, len(b))
		for _, c := range b {
			if !isXMLSpace(c) {
				clean = append(clean, c)
			}
		}
	}
	out := make([]byte, base64Std.DecodedLen(len(clean)))
	n, err := base64Std.Decode(out, clean)
	if err != nil {
		return fmt.Errorf("%w: %w", errSyntax, err)
	}
	v.SetBytes(out[:n])
	return nil
}

// setScalar decodes the text of a simple element or attribute into v (the
// field's value, pointer already resolved) according to f's kind.
func setScalar(f *gen.Field, v reflect.Value, text []byte) error {
	if f.Kind == gen.String {
		if !enumHasBytes(f.Enum, text) {
			return errEnum
		}
		v.SetString(string(text))
		return nil
	}
	b := collapse(text)
	switch {
	case f.Kind.IsUnsigned():
		return setUint(v, b, f.Kind.BitSize())
	case f.Kind.IsInteger():
		return setInt(v, b, f.Kind.BitSize())
	case f.Kind.IsFloat():
		return setFloat(v, b, f.Kind.BitSize())
	case f.Kind == gen.Bool:
		return setBool(v, b)
	case f.Kind == gen.Time:
		return setTime(v, b)
	case f.Kind == gen.Bytes:
		return setBytes(v, b)
	}
	return fmt.Errorf("kind %v is not a simple kind", f.Kind)
}
