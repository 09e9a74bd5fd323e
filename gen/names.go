package gen

import "unicode/utf8"

// IsNCName reports whether s is a valid XML NCName (a name without a colon), the
// form every element, attribute and complex-type name must have.
func IsNCName(s string) bool {
	if s == "" || !utf8.ValidString(s) {
		return false
	}
	for i, r := range s {
		if i == 0 {
			if !isNameStart(r) {
				return false
			}
			continue
		}
		if !isNameChar(r) {
			return false
		}
	}
	return true
}

// isNameStart implements NameStartChar of XML 1.0 (5th edition) minus ':'.
func isNameStart(r rune) bool {
	switch {
	case r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z', r == '_':
		return true
	case r < 0xC0:
		return false
	}
	return r <= 0xD6 || (r >= 0xD8 && r <= 0xF6) || (r >= 0xF8 && r <= 0x2FF) ||
		(r >= 0x370 && r <= 0x37D) || (r >= 0x37F && r <= 0x1FFF) ||
		(r >= 0x200C && r <= 0x200D) || (r >= 0x2070 && r <= 0x218F) ||
		(r >= 0x2C00 && r <= 0x2FEF) || (r >= 0x3001 && r <= 0xD7FF) ||
		(r >= 0xF900 && r <= 0xFDCF) || (r >= 0xFDF0 && r <= 0xFFFD) ||
		(r >= 0x10000 && r <= 0xEFFFF)
}

// isNameChar implements NameChar of XML 1.0 (5th edition) minus ':'.
func isNameChar(r rune) bool {
	switch {
	case isNameStart(r), r == '-', r == '.', r >= '0' && r <= '9', r == 0xB7:
		return true
	}
	return (r >= 0x300 && r <= 0x36F) || (r >= 0x203F && r <= 0x2040)
}
