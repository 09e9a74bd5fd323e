package auth

import (
	"crypto/subtle"
	"fmt"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/hotp"
	"github.com/pquerna/otp/totp"
)

// TOTP parameters: RFC 6238 defaults, which every authenticator app supports.
const (
	// TOTPIssuer is the issuer in provisioning URLs.
	TOTPIssuer = "xmlpipe"
	// TOTPPeriod is the length of one time step.
	TOTPPeriod = 30 * time.Second
	// TOTPSkew is how many steps before and after the current one are
	// accepted.
	TOTPSkew = 1
	// totpDigits is the code length.
	totpDigits = otp.DigitsSix
)

// newTOTPKey generates a TOTP secret (20 random bytes, SHA1, 6 digits, 30 s)
// for account.
func newTOTPKey(account string) (*otp.Key, error) {
	key, err := totp.Generate(totp.GenerateOpts{
		Issuer:      TOTPIssuer,
		AccountName: account,
		Period:      uint(TOTPPeriod / time.Second),
		Digits:      totpDigits,
		Algorithm:   otp.AlgorithmSHA1,
	})
	if err != nil {
		return nil, fmt.Errorf("auth: generate TOTP secret: %w", err)
	}
	return key, nil
}

// totpStep is the time step containing t.
func totpStep(t time.Time) int64 {
	return t.Unix() / int64(TOTPPeriod/time.Second)
}

// matchTOTP returns the step within TOTPSkew of now whose code for secret is
// code, trying the oldest step first. ok is false when no step matches or
// the code is not six digits.
func matchTOTP(code, secret string, now time.Time) (step int64, ok bool) {
	if !sixDigits(code) || secret == "" {
		return 0, false
	}
	cur := totpStep(now)
	for s := cur - TOTPSkew; s <= cur+TOTPSkew; s++ {
		if s < 0 {
			continue
		}
		want, err := hotp.GenerateCodeCustom(secret, uint64(s), hotp.ValidateOpts{Digits: totpDigits, Algorithm: otp.AlgorithmSHA1})
		if err != nil {
			return 0, false
		}
		if subtle.ConstantTimeCompare([]byte(want), []byte(code)) == 1 {
			return s, true
		}
	}
	return 0, false
}

// sixDigits reports whether code is exactly six ASCII digits.
func sixDigits(code string) bool {
	if len(code) != totpDigits.Length() {
		return false
	}
	for i := range len(code) {
		if code[i] < '0' || code[i] > '9' {
			return false
		}
	}
	return true
}
