package envsig

import (
	"encoding/xml"

	"github.com/russellhaering/goxmldsig/types"
)

// signature is the <Signature> Sign writes. goxmldsig's types.Reference
// declares its fields as DigestValue, DigestMethod, Transforms, so
// encoding/xml would marshal them in that order, which the XML-DSig schema
// forbids; reference puts them in the schema's order around the same leaf
// types. Verify unmarshals into types.Signature, where order does not matter.
type signature struct {
	XMLName        xml.Name             `xml:"http://www.w3.org/2000/09/xmldsig# Signature"`
	SignedInfo     signedInfo           `xml:"SignedInfo"`
	SignatureValue types.SignatureValue `xml:"SignatureValue"`
}

// signedInfo is <SignedInfo> with exactly one Reference.
type signedInfo struct {
	XMLName                xml.Name                     `xml:"http://www.w3.org/2000/09/xmldsig# SignedInfo"`
	CanonicalizationMethod types.CanonicalizationMethod `xml:"CanonicalizationMethod"`
	SignatureMethod        types.SignatureMethod        `xml:"SignatureMethod"`
	Reference              reference                    `xml:"Reference"`
}

// reference is <Reference> with its children in the schema's order.
type reference struct {
	XMLName      xml.Name           `xml:"http://www.w3.org/2000/09/xmldsig# Reference"`
	URI          string             `xml:"URI,attr"`
	Transforms   types.Transforms   `xml:"Transforms"`
	DigestMethod types.DigestMethod `xml:"DigestMethod"`
	DigestValue  string             `xml:"http://www.w3.org/2000/09/xmldsig# DigestValue"`
}

// newSignedInfo returns the SignedInfo of this package's profile over the
// base64 digest.
func newSignedInfo(digest string) signedInfo {
	return signedInfo{
		CanonicalizationMethod: types.CanonicalizationMethod{Algorithm: AlgorithmExcC14N},
		SignatureMethod:        types.SignatureMethod{Algorithm: AlgorithmEd25519},
		Reference: reference{
			URI: "",
			Transforms: types.Transforms{Transforms: []types.Transform{
				{Algorithm: AlgorithmEnveloped},
				{Algorithm: AlgorithmExcC14N},
			}},
			DigestMethod: types.DigestMethod{Algorithm: AlgorithmSHA256},
			DigestValue:  digest,
		},
	}
}
