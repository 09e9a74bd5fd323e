package auth

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/pquerna/otp"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth/authtest"
)

func TestAddUserErrors(t *testing.T) {
	tests := []struct {
		name, user, pass string
		role             Role
		want             error
	}{
		{"taken", "alice", alicePass, Operator, ErrUserExists},
		{"upper case", "Alice", alicePass, Operator, ErrInvalidName},
		{"empty name", "", alicePass, Operator, ErrInvalidName},
		{"leading dot", ".alice", alicePass, Operator, ErrInvalidName},
		{"space", "al ice", alicePass, Operator, ErrInvalidName},
		{"65 characters", strings.Repeat("a", 65), alicePass, Operator, ErrInvalidName},
		{"short password", "bob", "1234567", Operator, ErrWeakPassword},
		{"7 runes in 14 bytes", "bob", "ééééééé", Operator, ErrWeakPassword},
		{"huge password", "bob", strings.Repeat("x", MaxPasswordBytes+1), Operator, ErrWeakPassword},
		{"bad role", "bob", bobPass, Role("owner"), ErrUnknownRole},
		{"empty role", "bob", bobPass, Role(""), ErrUnknownRole},
	}
	f := newFixture(t)
	f.addUser(t, "alice", alicePass, Operator)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := f.svc.AddUser(context.Background(), tt.user, tt.pass, tt.role); !errors.Is(err, tt.want) {
				t.Fatalf("AddUser = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestAddUserAccepts(t *testing.T) {
	f := newFixture(t)
	for _, name := range []string{"a", "0", "alice.b_c-d", strings.Repeat("z", 64)} {
		f.addUser(t, name, "8 chars!", Viewer)
	}
	// Eight multi-byte characters are eight characters.
	f.addUser(t, "unicode", "éééééééé", Viewer)
}

func TestProvisioningURL(t *testing.T) {
	f := newFixture(t)
	url, err := f.svc.AddUser(context.Background(), "alice", alicePass, Operator)
	if err != nil {
		t.Fatal(err)
	}
	key, err := otp.NewKeyFromURL(url)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]any{
		"type": key.Type(), "issuer": key.Issuer(), "account": key.AccountName(),
		"period": key.Period(), "digits": key.Digits(), "algorithm": key.Algorithm(), "secret length": len(key.Secret()),
	}
	want := map[string]any{
		"type": "totp", "issuer": "xmlpipe", "account": "alice@hello-world",
		"period": uint64(30), "digits": otp.DigitsSix, "algorithm": otp.AlgorithmSHA1, "secret length": 32,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("provisioning URL %s (-want +got):\n%s", url, diff)
	}
}

func TestUserManagement(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	oldSecret := f.addUser(t, "alice", alicePass, Operator)
	f.clock.Advance(time.Minute)
	bobSecret := f.addUser(t, "bob", bobPass, Viewer)

	// Unknown users.
	for name, err := range map[string]error{
		"RemoveUser":  f.svc.RemoveUser(ctx, "carol"),
		"SetPassword": f.svc.SetPassword(ctx, "carol", "long enough"),
		"SetRole":     f.svc.SetRole(ctx, "carol", Admin),
	} {
		if !errors.Is(err, ErrUnknownUser) {
			t.Errorf("%s of an unknown user: %v", name, err)
		}
	}
	if _, err := f.svc.ResetTOTP(ctx, "carol"); !errors.Is(err, ErrUnknownUser) {
		t.Errorf("ResetTOTP of an unknown user: %v", err)
	}
	if err := f.svc.SetRole(ctx, "bob", "root"); !errors.Is(err, ErrUnknownRole) {
		t.Errorf("SetRole root: %v", err)
	}
	if err := f.svc.SetPassword(ctx, "bob", "short"); !errors.Is(err, ErrWeakPassword) {
		t.Errorf("SetPassword short: %v", err)
	}

	// Password change: the old one fails, the new one works.
	if err := f.svc.SetPassword(ctx, "alice", "the new password"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Login(ctx, Credentials{Username: "alice", Password: alicePass, TOTP: codeAt(t, oldSecret, f.clock.Now())}); !errors.Is(err, ErrInvalidCredentials) {
		t.Errorf("old password after SetPassword: %v", err)
	}
	f.login(t, "alice", "the new password", oldSecret)

	// TOTP reset: the old secret fails, the new one works at once, in the
	// step of the last login (the replay guard restarts with the secret).
	url, err := f.svc.ResetTOTP(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	newSecret := authtest.Secret(t, url)
	if newSecret == oldSecret {
		t.Fatal("ResetTOTP kept the secret")
	}
	if _, err := f.svc.Login(ctx, Credentials{Username: "alice", Password: "the new password", TOTP: codeAt(t, oldSecret, f.clock.Now())}); !errors.Is(err, ErrInvalidCredentials) {
		t.Errorf("old secret after ResetTOTP: %v", err)
	}
	f.login(t, "alice", "the new password", newSecret)

	if err := f.svc.SetRole(ctx, "bob", Admin); err != nil {
		t.Fatal(err)
	}
	if err := f.svc.RemoveUser(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	users, err := f.svc.Users(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []UserInfo{{Name: "bob", Role: Admin, Created: t0.Add(time.Minute), HasTOTP: true}}
	if diff := cmp.Diff(want, users); diff != "" {
		t.Errorf("Users (-want +got):\n%s", diff)
	}
	f.login(t, "bob", bobPass, bobSecret)
}
