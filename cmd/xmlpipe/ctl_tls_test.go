package main

import (
	"crypto/tls"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// TestCtlTrustsOOBCertificate: a remote OOB channel (allow_remote_oob)
// serves oob.tls.cert, most often self-signed; ctl, reading the same
// organism.yaml, trusts that certificate, so its TLS handshake verifies
// (it failed with "certificate signed by unknown authority").
func TestCtlTrustsOOBCertificate(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.NotFoundHandler())
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	defer srv.Close()
	certFile := filepath.Join(t.TempDir(), "oob-cert.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(certFile, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	addr := strings.TrimPrefix(srv.URL, "https://")

	conf, err := ctlTLS(config.OOB{TLS: config.TLS{Cert: certFile, Key: "unused-key.pem"}})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := tls.Dial("tcp", addr, conf)
	if err != nil {
		t.Fatalf("handshake with the configured certificate trusted: %v", err)
	}
	conn.Close()

	if conf, err := ctlTLS(config.OOB{}); conf != nil || err != nil {
		t.Errorf("a channel without oob.tls: %v %v, want no TLS configuration", conf, err)
	}
	missing := filepath.Join(t.TempDir(), "nope.pem")
	if _, err := ctlTLS(config.OOB{TLS: config.TLS{Cert: missing, Key: "k.pem"}}); err == nil || !strings.Contains(err.Error(), "oob.tls.cert") {
		t.Errorf("an unreadable certificate: %v, want an error naming oob.tls.cert", err)
	}
}
