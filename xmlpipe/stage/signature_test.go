package stage

import (
	"encoding/xml"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
)

func TestSplitSignature(t *testing.T) {
	const d = "urn:d"
	env := xml.Name{Space: "urn:e", Local: "m"}
	meta := xml.Name{Space: "urn:e", Local: "meta"}
	tests := []struct {
		name    string
		doc     string
		want    *SignatureParts
		wantErr error
	}{
		{
			name: "enveloped, last child of meta",
			doc:  `<m xmlns="urn:e"><meta><from>a</from><S xmlns="urn:d"><SignedInfo  b="1"><R/></SignedInfo><V>x</V></S></meta><P xmlns="">t</P></m>`,
			want: &SignatureParts{
				Root: env, Container: meta, Count: 1, Found: true, Last: true,
				Unsigned:   []byte(`<m xmlns="urn:e"><meta><from>a</from></meta><P xmlns="">t</P></m>`),
				Signature:  []byte(`<S xmlns="urn:d"><SignedInfo b="1"><R></R></SignedInfo><V>x</V></S>`),
				SignedInfo: []byte(`<SignedInfo xmlns="urn:d" b="1"><R></R></SignedInfo>`),
			},
		},
		{
			name: "prefixed envelope and signature",
			doc:  `<e:m xmlns:e="urn:e" xmlns:ds="urn:d"><e:meta><e:from>a</e:from><ds:S><ds:SignedInfo/></ds:S><e:thread>t</e:thread></e:meta></e:m>`,
			want: &SignatureParts{
				Root: env, Container: meta, Count: 1, Found: true, Last: false,
				Unsigned:   []byte(`<e:m xmlns:e="urn:e"><e:meta><e:from>a</e:from><e:thread>t</e:thread></e:meta></e:m>`),
				Signature:  []byte(`<ds:S xmlns:ds="urn:d"><ds:SignedInfo></ds:SignedInfo></ds:S>`),
				SignedInfo: []byte(`<ds:SignedInfo xmlns:ds="urn:d"></ds:SignedInfo>`),
			},
		},
		{
			name: "unsigned: the whole document",
			doc:  `<m xmlns="urn:e"><meta><from>a</from></meta><P xmlns=""/></m>`,
			want: &SignatureParts{
				Root: env, Container: meta,
				Unsigned: []byte(`<m xmlns="urn:e"><meta><from>a</from></meta><P xmlns=""></P></m>`),
			},
		},
		{
			name: "first of two is split off, both counted",
			doc:  `<m xmlns="urn:e"><meta><S xmlns="urn:d">1</S><S xmlns="urn:d">2</S></meta></m>`,
			want: &SignatureParts{
				Root: env, Container: meta, Count: 2, Found: true, Last: false,
				Unsigned:  []byte(`<m xmlns="urn:e"><meta><S xmlns="urn:d">2</S></meta></m>`),
				Signature: []byte(`<S xmlns="urn:d">1</S>`),
			},
		},
		{
			name: "only children of meta are split off; elsewhere it is counted",
			doc:  `<m xmlns="urn:e"><meta/><P><S xmlns="urn:d"/></P></m>`,
			want: &SignatureParts{
				Root: env, Container: meta, Count: 1,
				Unsigned: []byte(`<m xmlns="urn:e"><meta></meta><P><S xmlns="urn:d"></S></P></m>`),
			},
		},
		{name: "malformed", doc: `<m><meta></m>`, wantErr: failure.ErrMalformed},
		{name: "doctype", doc: `<!DOCTYPE m><m/>`, wantErr: failure.ErrDoctype},
		{name: "empty", doc: ``, wantErr: failure.ErrEmpty},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SplitSignature([]byte(tc.doc), d, "S")
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("parts (-want +got):\n%s", diff)
			}
			// SplitSignatureUnsigned: the same, without the signature's
			// own canonical forms.
			got, err = SplitSignatureUnsigned([]byte(tc.doc), d, "S")
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("unsigned only: err %v, want %v", err, tc.wantErr)
			}
			if tc.want != nil {
				want := *tc.want
				want.Signature, want.SignedInfo = nil, nil
				if diff := cmp.Diff(&want, got); diff != "" {
					t.Fatalf("unsigned only: parts (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// FuzzSplitSignature: splitting never panics; every part is canonical; with
// no signature element the unsigned form is the whole document's C14N, and
// with one, the unsigned form is C14N of a document (the signature's removal
// leaves well-formed XML).
func FuzzSplitSignature(f *testing.F) {
	f.Add([]byte(`<m xmlns="urn:e"><meta><from>a</from><S xmlns="urn:d"><SignedInfo b="1"><R/></SignedInfo></S></meta><P xmlns="">t</P></m>`))
	f.Add([]byte(`<e:m xmlns:e="urn:e" xmlns:ds="urn:d"><e:meta><ds:S e:a="1"><ds:SignedInfo/></ds:S><e:x/></e:meta></e:m>`))
	f.Add([]byte(`<m><meta/><S xmlns="urn:d"/></m>`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		parts, err := SplitSignature(raw, "urn:d", "S")
		if err != nil {
			return
		}
		whole, err := Canonicalize(raw)
		if err != nil {
			t.Fatalf("split but not canonicalisable: %v", err)
		}
		if !parts.Found && string(parts.Unsigned) != string(whole) {
			t.Fatalf("no signature, yet unsigned form differs:\n%s\n%s", parts.Unsigned, whole)
		}
		for name, b := range map[string][]byte{"unsigned": parts.Unsigned, "signature": parts.Signature, "SignedInfo": parts.SignedInfo} {
			if b == nil {
				continue
			}
			again, err := Canonicalize(b)
			if err != nil || string(again) != string(b) {
				t.Fatalf("%s part is not canonical (%v):\n%s\n%s", name, err, b, again)
			}
		}
	})
}
