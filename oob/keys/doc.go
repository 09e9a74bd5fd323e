// Package keys holds the organism's Ed25519 identity and the owner's key
// pair as PEM files.
//
// In the data directory (organism.data_dir), under keys/ (mode 0700):
//
//	keys/organism.ed25519      the organism's private key (PKCS#8 "PRIVATE KEY", mode 0600);
//	                           organism.identity names another path when set
//	keys/owner.ed25519         the owner's private key (mode 0600): signs OOB requests
//	keys/owner.ed25519.pub     the owner's public key (PKIX "PUBLIC KEY"): what the OOB
//	                           server verifies requests with
//
// Export writes the organism's public key (PKIX "PUBLIC KEY"), the file a
// federation peer names in gateways[].trusted_identity. A fingerprint is
// "SHA256:" followed by the unpadded base64 of the SHA-256 of the 32 raw
// public key bytes (the form ssh-keygen prints).
package keys
