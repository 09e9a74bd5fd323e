package certs

import (
	"crypto/tls"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/regfile"
)

// loadPair is tls.LoadX509KeyPair reading both files without blocking: a
// certificate or key path naming a FIFO or device is refused
// (regfile.ErrNotRegular) instead of hanging the start.
func loadPair(certFile, keyFile string) (tls.Certificate, error) {
	certPEM, err := regfile.Read(certFile)
	if err != nil {
		return tls.Certificate{}, err
	}
	keyPEM, err := regfile.Read(keyFile)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(certPEM, keyPEM)
}
