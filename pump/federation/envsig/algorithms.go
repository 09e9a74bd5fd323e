package envsig

// Algorithm and namespace URIs, the only ones Verify accepts.
const (
	// Namespace is the XML-DSig namespace of <Signature> and its children.
	Namespace = "http://www.w3.org/2000/09/xmldsig#"
	// AlgorithmEd25519 is RFC 9231's Ed25519 SignatureMethod.
	AlgorithmEd25519 = "http://www.w3.org/2021/04/xmldsig-more#eddsa-ed25519"
	// AlgorithmExcC14N is exclusive C14N 1.0 without comments, the
	// CanonicalizationMethod and the second Transform.
	AlgorithmExcC14N = "http://www.w3.org/2001/10/xml-exc-c14n#"
	// AlgorithmEnveloped is the enveloped-signature Transform: the envelope
	// is hashed without the <Signature> element.
	AlgorithmEnveloped = "http://www.w3.org/2000/09/xmldsig#enveloped-signature"
	// AlgorithmSHA256 is the DigestMethod.
	AlgorithmSHA256 = "http://www.w3.org/2001/04/xmlenc#sha256"
)
