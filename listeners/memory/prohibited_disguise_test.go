package memory

import "testing"

// TestProhibitedSeesThroughDisguises: a model that wants a secret kept
// writes it so a byte-wise scan misses it — invisible characters inside it,
// full-width or styled letters, no-break spaces and Unicode dashes between
// a card's digit groups. What a reader takes for the secret is judged.
func TestProhibitedSeesThroughDisguises(t *testing.T) {
	for _, tc := range []struct {
		name, text, kind string
	}{
		{"zero-width spaces in an api key", "s\u200bk\u200b-proj-abcdefghijklmnop1234567890", KindAPIKey},
		{"soft hyphen in a github token", "ghp_abcdefghij\u00adklmnopqrstuvwxyz0123456789", KindAPIKey},
		{"word joiner in password", "pass\u2060word: hunter2", KindPassword},
		{"byte order mark in a pem armour", "-----BEGIN \ufeffPRIVATE KEY-----", KindPrivateKey},
		{"full-width api key", "ｓｋ－ｐｒｏｊ－abcdefghijklmnop1234567890", KindAPIKey},
		{"mathematical bold password", "𝐩𝐚𝐬𝐬𝐰𝐨𝐫𝐝: hunter2", KindPassword},
		{"no-break spaces in a card", "4111\u00a01111\u00a01111\u00a01111", KindCardNumber},
		{"unicode dashes in a card", "4111\u20101111\u20131111\u20141111", KindCardNumber},
		{"combining marks over a key", "s\u0336k\u0336-proj-abcdefghijklmnop1234567890", KindAPIKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, ok := Prohibited(tc.text)
			if !ok || f.Kind != tc.kind {
				t.Fatalf("Prohibited(%q) = %+v %v, want %s", tc.text, f, ok, tc.kind)
			}
		})
	}
}

// TestProhibitedPasswordWrittenAsOne: a password the text presents as one
// — quoted after "password is", or pointed at with an arrow — is refused
// even when its first word reads like prose about passwords ("correct",
// "new", "my").
func TestProhibitedPasswordWrittenAsOne(t *testing.T) {
	for _, text := range []string{
		`the password is "correct horse battery staple"`,
		"my passphrase is 'new moon rising'",
		"password is `my dog Rex 2019`",
		"password -> hunter2",
		"password => hunter2",
		"password → hunter2",
	} {
		if f, ok := Prohibited(text); !ok || f.Kind != KindPassword {
			t.Errorf("Prohibited(%q) = %+v %v, want %s", text, f, ok, KindPassword)
		}
	}
}
