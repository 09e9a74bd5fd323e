package console_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/console"
)

// TestDialAskHTTPToHTTPSBus: the Python server's clients spoke http://, so
// a migrating user's --connect http://… reaches a bus that speaks HTTPS.
// The console says to use https:// before it asks for a login (it said
// "login failed: 400 Bad Request" after taking the password).
func TestDialAskHTTPToHTTPSBus(t *testing.T) {
	b := startBus(t)
	host := strings.TrimPrefix(b.url, "https://")
	ctx, cancel := context.WithTimeout(context.Background(), remoteWait)
	defer cancel()
	asked := false
	_, err := console.DialAsk(ctx, "http://"+host, b.fingerprint, func() (auth.Credentials, error) {
		asked = true
		return auth.Credentials{}, errors.New("asked for a login")
	})
	if err == nil {
		t.Fatal("dial over http:// to an HTTPS bus succeeded")
	}
	if asked {
		t.Error("the console asked for credentials before finding the bus speaks HTTPS")
	}
	if want := "https://" + host; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say to connect to %s", err, want)
	}
}
