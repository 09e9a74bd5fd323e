package memory

import (
	"math"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/textfold"
)

// The kinds of prohibited content (Agent OS memory law: passwords, API keys,
// tokens, secrets, card numbers, SSNs and private keys are never stored).
const (
	KindPrivateKey = "private_key"
	KindAPIKey     = "api_key"
	KindToken      = "token"
	KindPassword   = "password"
	KindCardNumber = "card_number"
	KindSSN        = "ssn"
	KindSecret     = "secret"
)

// Finding is a piece of text memory law forbids storing: its kind and why.
// It never quotes the secret itself.
type Finding struct {
	Kind   string
	Reason string
}

// MaxScanBytes bounds the text Prohibited scans; longer text is judged by
// its first MaxScanBytes (a memory is short: the memory listener refuses
// anything longer than its max_bytes, 64 KiB at most, before it gets here).
const MaxScanBytes = 256 << 10

var (
	// pemPrivateKey is the armour of a PEM private key: PKCS#1, PKCS#8,
	// EC, DSA, OpenSSH, encrypted, PGP private key blocks.
	pemPrivateKey = regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----`)
	// bareSSHKey is the base64 of "openssh-key-v1", how an OpenSSH private
	// key's body begins even without its armour; puttyKey a PuTTY key file.
	bareSSHKey = regexp.MustCompile(`b3BlbnNzaC1rZXktdjE`)
	puttyKey   = regexp.MustCompile(`PuTTY-User-Key-File-\d+:`)
	// apiKey are the prefixes of well-known API keys and access tokens.
	apiKey = regexp.MustCompile(`\b(?:` +
		`sk-(?:proj-|ant-|live-|test-|svcacct-|admin-)?[A-Za-z0-9_-]{16,}` + // OpenAI, Anthropic, …
		`|xai-[A-Za-z0-9]{16,}` + // xAI
		`|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}` + // GitHub
		`|(?:AKIA|ASIA|AGPA|AIDA|AROA)[A-Z0-9]{16}` + // AWS access key ids
		`|xox[abprs]-[A-Za-z0-9-]{10,}` + // Slack
		`|AIza[0-9A-Za-z_-]{35}` + // Google
		`|glpat-[A-Za-z0-9_-]{20,}` + // GitLab
		`|(?:sk|rk|pk)_(?:live|test)_[0-9A-Za-z]{16,}` + // Stripe
		`|hf_[A-Za-z0-9]{30,}` + // Hugging Face
		`|npm_[A-Za-z0-9]{36}` + // npm
		`)`)
	// jwt is a JSON Web Token (header and claims are base64url JSON objects).
	jwt = regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`)
	// bearer is an Authorization header's credentials.
	bearer = regexp.MustCompile(`(?i)\b(?:bearer|basic)\s+[A-Za-z0-9._~+/-]{16,}=*`)
	// password is a password given by name: "password: x", "pwd=x",
	// "password -> x", "my passphrase is x" (group 1 the separator, 2 an
	// opening quote, 3 the first word of the value).
	password = regexp.MustCompile("(?i)\\b(?:pass(?:word|wd|phrase|code)?|pwd|pin)\\b\\s*([:=]+|-+>|→|\\bis\\b|\\bwas\\b)\\s*([\"'`]?)([^\\s\"'`]+)")
	// namedSecret is a secret, token or key given by name with a value
	// that looks like one.
	namedSecret = regexp.MustCompile("(?i)\\b(?:secret|token|api[_ -]?key|access[_ -]?key|private[_ -]?key|client[_ -]?secret)\\b\\s*(?:[:=]+|\\bis\\b)\\s*[\"'`]?([A-Za-z0-9+/=_.~-]{8,})")
	// cardRun is a run of 13 to 19 digits, single spaces or dashes between
	// them allowed.
	cardRun = regexp.MustCompile(`\d(?:[ -]?\d){12,18}`)
	// sshPublicKey is an OpenSSH public key line's type and body: public,
	// so its random-looking body is no secret.
	sshPublicKey = regexp.MustCompile(`\b(?:ssh-(?:rsa|dss|ed25519)|ecdsa-sha2-nistp\d+|sk-(?:ssh-ed25519|ecdsa-sha2-nistp256)@openssh\.com)\s+AAAA[A-Za-z0-9+/]+=*`)
	// ssn is a US social security number written as such.
	ssn = regexp.MustCompile(`\b(\d{3})-(\d{2})-(\d{4})\b`)
)

// notAPassword are words that follow "password is" in prose about
// passwords rather than in a password.
var notAPassword = map[string]bool{
	"required": true, "needed": true, "wrong": true, "incorrect": true, "correct": true, "invalid": true,
	"valid": true, "expired": true, "set": true, "reset": true, "changed": true, "missing": true, "empty": true,
	"the": true, "a": true, "an": true, "not": true, "too": true, "strong": true, "weak": true, "secure": true,
	"safe": true, "hidden": true, "stored": true, "protected": true, "unknown": true, "long": true, "short": true,
	"case-sensitive": true, "optional": true, "mandatory": true, "forgotten": true, "lost": true, "same": true,
	"different": true, "new": true, "old": true, "my": true, "your": true, "his": true, "her": true, "their": true,
	"our": true, "its": true, "in": true, "on": true, "at": true, "for": true, "of": true, "to": true, "and": true,
	"or": true, "manager": true, "policy": true, "rules": true, "field": true, "prompt": true, "hash": true,
}

// Prohibited reports the first thing in text that memory law forbids
// storing, whatever the consent: a private key, an API key or access
// token, a password, a card number (Luhn-valid, 13 to 19 digits), a US SSN,
// or a long high-entropy string that can only be a secret. It judges the
// text as a reader sees it (textfold.Fold): invisible or look-alike characters
// inside a secret do not hide it.
func Prohibited(text string) (Finding, bool) {
	if len(text) > MaxScanBytes {
		text = text[:MaxScanBytes]
	}
	if text = textfold.Fold(text); len(text) > MaxScanBytes {
		text = text[:MaxScanBytes]
	}
	switch {
	case pemPrivateKey.MatchString(text) || bareSSHKey.MatchString(text) || puttyKey.MatchString(text):
		return Finding{KindPrivateKey, "it holds a private key"}, true
	case apiKey.MatchString(text):
		return Finding{KindAPIKey, "it holds an API key"}, true
	case jwt.MatchString(text) || bearer.MatchString(text):
		return Finding{KindToken, "it holds an access token"}, true
	}
	for _, m := range password.FindAllStringSubmatch(text, -1) {
		v := strings.TrimRight(m[3], ".,;:!?)")
		// "password: x", "password -> x" and `password is "x"` present x as
		// the password, whatever x reads as.
		named := strings.ContainsAny(m[1], ":=>→") || m[2] != ""
		if v != "" && (named || !notAPassword[strings.ToLower(v)]) {
			return Finding{KindPassword, "it holds a password"}, true
		}
	}
	if namedSecret.MatchString(text) {
		return Finding{KindSecret, "it holds a secret, token or key"}, true
	}
	if hasCardNumber(text) {
		return Finding{KindCardNumber, "it holds a card number"}, true
	}
	for _, m := range ssn.FindAllStringSubmatch(text, -1) {
		if m[1] != "000" && m[1] != "666" && m[1][0] != '9' && m[2] != "00" && m[3] != "0000" {
			return Finding{KindSSN, "it holds a social security number"}, true
		}
	}
	if hasHighEntropyToken(sshPublicKey.ReplaceAllString(text, " ")) {
		return Finding{KindSecret, "it holds a long random string that looks like a secret"}, true
	}
	return Finding{}, false
}

// hasCardNumber reports a Luhn-valid run of 13 to 19 digits beginning as
// card numbers do (2 to 6), not part of a longer number.
func hasCardNumber(text string) bool {
	for _, loc := range cardRun.FindAllStringIndex(text, -1) {
		if loc[0] > 0 && isDigitByte(text[loc[0]-1]) || loc[1] < len(text) && isDigitByte(text[loc[1]]) {
			continue
		}
		digits := make([]byte, 0, 19)
		for i := loc[0]; i < loc[1]; i++ {
			if isDigitByte(text[i]) {
				digits = append(digits, text[i])
			}
		}
		if digits[0] >= '2' && digits[0] <= '6' && luhn(digits) {
			return true
		}
	}
	return false
}

func isDigitByte(c byte) bool { return c >= '0' && c <= '9' }

// luhn reports whether digits pass the Luhn check.
func luhn(digits []byte) bool {
	sum := 0
	for i := range digits {
		d := int(digits[len(digits)-1-i] - '0')
		if i%2 == 1 {
			if d *= 2; d > 9 {
				d -= 9
			}
		}
		sum += d
	}
	return sum%10 == 0
}

// Bounds of the high-entropy rule.
const (
	minSecretLen     = 32
	minSecretDigits  = 2
	minSecretEntropy = 4.05 // bits per character: above any hex string's 4
	maxSecretVowels  = 0.36 // of the letters: prose and identifiers have ~0.4, random text ~0.2
)

// hasHighEntropyToken reports a word of at least 32 characters of the
// base64 and base64url alphabets that reads as random: two digits or more,
// over 4.05 bits of entropy per character (more than hex digests and UUIDs
// can have) and few vowels among its letters (unlike prose, paths and
// CamelCase identifiers).
func hasHighEntropyToken(text string) bool {
	for _, w := range strings.FieldsFunc(text, func(r rune) bool { return !isSecretRune(r) }) {
		w = strings.TrimRight(w, "=")
		if len(w) < minSecretLen {
			continue
		}
		letters, vowels, digits := 0, 0, 0
		for i := 0; i < len(w); i++ {
			switch c := w[i] | 0x20; {
			case w[i] >= '0' && w[i] <= '9':
				digits++
			case c >= 'a' && c <= 'z':
				letters++
				if strings.IndexByte("aeiou", c) >= 0 {
					vowels++
				}
			}
		}
		if digits >= minSecretDigits && letters > 0 && float64(vowels)/float64(letters) < maxSecretVowels &&
			entropy(w) >= minSecretEntropy {
			return true
		}
	}
	return false
}

// isSecretRune reports a character of the base64/base64url alphabets.
func isSecretRune(r rune) bool {
	return r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
		r == '+' || r == '/' || r == '_' || r == '-' || r == '=')
}

// entropy is the Shannon entropy of s in bits per byte.
func entropy(s string) float64 {
	var counts [256]int
	for i := 0; i < len(s); i++ {
		counts[s[i]]++
	}
	h, n := 0.0, float64(len(s))
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / n
			h -= p * math.Log2(p)
		}
	}
	return h
}
