package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/bus/client"
)

// ErrHTTPSBus is wrapped by DialAsk when an http:// URL reaches a bus that
// speaks HTTPS (every bus but one run with --insecure-dev).
var ErrHTTPSBus = errors.New("the bus speaks HTTPS")

// plainToTLS begins the answer Go's HTTPS server gives a plain HTTP request.
const plainToTLS = "Client sent an HTTP request to an HTTPS server"

// AskCredentials supplies the username, password and TOTP code; DialAsk
// calls it only when the bus needs a login.
type AskCredentials func() (auth.Credentials, error)

// login logs in at base, or, when the bus answers GET /auth/me with
// insecure_dev (a server run with --insecure-dev authenticates no one),
// takes the token that answer carries without asking for credentials.
func login(ctx context.Context, hc *http.Client, base string, ask AskCredentials) (*client.Client, error) {
	token, err := insecureToken(ctx, hc, base)
	if err != nil {
		return nil, err
	}
	if token != "" {
		return &client.Client{Base: base, HTTP: hc, Token: token}, nil
	}
	creds, err := ask()
	if err != nil {
		return nil, err
	}
	return client.Login(ctx, hc, base, creds)
}

// insecureToken asks GET /auth/me without a token: a bus in insecure dev
// mode answers it with insecure_dev and its fixed token; any other answer
// (401 on a bus that authenticates, or an older bus) is "" and no error.
// Only a failed request (TLS, network) is an error.
func insecureToken(ctx context.Context, hc *http.Client, base string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/auth/me", nil)
	if err != nil {
		return "", fmt.Errorf("connect: %w", err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("connect: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		if resp.StatusCode == http.StatusBadRequest && strings.HasPrefix(string(body), plainToTLS) {
			return "", fmt.Errorf("connect: %s: %w: connect to https://%s (with the --fingerprint xmlpipe run printed)",
				base, ErrHTTPSBus, req.URL.Host)
		}
		return "", nil
	}
	var me struct {
		Token       string `json:"token"`
		InsecureDev bool   `json:"insecure_dev"`
	}
	if json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&me) != nil || !me.InsecureDev {
		return "", nil
	}
	return me.Token, nil
}
