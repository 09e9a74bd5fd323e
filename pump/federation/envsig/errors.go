package envsig

import "errors"

// Sentinel errors; every error of Sign and Verify wraps exactly one of them
// and says what is wrong.
var (
	// ErrUnsigned: the envelope carries no <Signature>.
	ErrUnsigned = errors.New("envsig: envelope is not signed")
	// ErrAlgorithm: the signature names an algorithm (or an algorithm
	// parameter) other than the ones this package uses.
	ErrAlgorithm = errors.New("envsig: algorithm not accepted")
	// ErrDigest: the envelope's content does not match the signed digest
	// (tampered, or reformatted after signing).
	ErrDigest = errors.New("envsig: digest mismatch")
	// ErrSignature: the signature value does not verify over SignedInfo with
	// the peer's key (another key, or a tampered SignedInfo).
	ErrSignature = errors.New("envsig: signature does not verify")
	// ErrMalformed: not an envelope, not well-formed, or a signature of the
	// wrong shape (misplaced, duplicated, unexpected elements or references).
	ErrMalformed = errors.New("envsig: malformed signed envelope")
	// ErrKey: a key of the wrong size.
	ErrKey = errors.New("envsig: bad key")
)
