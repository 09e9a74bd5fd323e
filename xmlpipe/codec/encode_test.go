package codec

import (
	"errors"
	"flag"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/xml-pipeline/xmlpipe/gen"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func TestAppendExact(t *testing.T) {
	greet := mustCodec[Greeting](t)
	resp := mustCodec[GreetingResponse](t)
	order := mustCodec[Order](t)
	tests := []struct {
		name    string
		c       *Codec
		v       any
		emptyNS bool
		want    string
	}{
		{"python wire form", resp, &GreetingResponse{Message: "Hello Dan!", OriginalSender: "response-handler"}, true,
			`<GreetingResponse xmlns=""><Message>Hello Dan!</Message><OriginalSender>response-handler</OriginalSender></GreetingResponse>`},
		{"no xmlns", greet, Greeting{Name: "Dan"}, false, `<Greeting><Name>Dan</Name></Greeting>`},
		{"empty string element", greet, Greeting{}, true, `<Greeting xmlns=""><Name></Name></Greeting>`},
		{"escaping (Q11)", greet, Greeting{Name: `</Name><to>evil</to>&amp;"'` + "\r"}, false,
			`<Greeting><Name>&lt;/Name&gt;&lt;to&gt;evil&lt;/to&gt;&amp;amp;"'&#xD;</Name></Greeting>`},
		{"invalid characters replaced", greet, Greeting{Name: "a\x00b\x1bc\xffd\uFFFEe"}, false,
			"<Greeting><Name>a\uFFFDb\uFFFDc\uFFFDd\uFFFDe</Name></Greeting>"},
		{"namespace always written", order, &Order{Prio: "low"}, false,
			`<Order xmlns="https://xml-pipeline.org/ns/shop/order/v1" id=""><Items></Items><Qty>0</Qty><Prio>low</Prio><When>0001-01-01T00:00:00Z</When><Blob></Blob></Order>`},
		{"namespace even with emptyNS", order, &Order{Prio: "low"}, true,
			`<Order xmlns="https://xml-pipeline.org/ns/shop/order/v1" id=""><Items></Items><Qty>0</Qty><Prio>low</Prio><When>0001-01-01T00:00:00Z</When><Blob></Blob></Order>`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.c.Append(nil, tt.v, tt.emptyNS)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, string(got)); diff != "" {
				t.Errorf("Append (-want +got):\n%s", diff)
			}
			if err := wellFormed(got); err != nil {
				t.Errorf("not well-formed: %v", err)
			}
		})
	}
}

func TestAppendGoldenOrder(t *testing.T) {
	got, err := mustCodec[Order](t).Append(nil, fullOrder(), false)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "order.xml")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s (-want +got):\n%s", path, diff)
	}
}

// TestAppendFloats covers reference quirk Q14: every float is a valid
// xs:double / xs:float literal.
func TestAppendFloats(t *testing.T) {
	tests := []struct {
		f    float64
		bits int
		want string
	}{
		{0, 64, "0"},
		{math.Copysign(0, -1), 64, "-0"},
		{1.5, 64, "1.5"},
		{-2, 64, "-2"},
		{123456789, 64, "123456789"},
		{1e20, 64, "100000000000000000000"},
		{1e21, 64, "1e+21"},
		{1e-6, 64, "0.000001"},
		{1e-7, 64, "1e-07"},
		{0.1, 64, "0.1"},
		{math.MaxFloat64, 64, "1.7976931348623157e+308"},
		{math.SmallestNonzeroFloat64, 64, "5e-324"},
		{math.Inf(1), 64, "INF"},
		{math.Inf(-1), 64, "-INF"},
		{math.NaN(), 64, "NaN"},
		{float64(float32(0.1)), 32, "0.1"},
		{float64(float32(1e-7)), 32, "1e-07"},
		{math.MaxFloat32, 32, "3.4028235e+38"},
	}
	for _, tt := range tests {
		if got := string(appendFloat(nil, tt.f, tt.bits)); got != tt.want {
			t.Errorf("appendFloat(%v, %d) = %q, want %q", tt.f, tt.bits, got, tt.want)
		}
	}
}

func TestAppendTimes(t *testing.T) {
	lmt := time.FixedZone("LMT", 9*60+21) // an offset with seconds, as Paris had before 1911
	tests := []struct {
		t       time.Time
		want    string
		wantErr bool
	}{
		{time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), "2026-01-01T00:00:00Z", false},
		{time.Date(2026, 1, 1, 0, 0, 0, 1, time.UTC), "2026-01-01T00:00:00.000000001Z", false},
		{time.Date(2026, 1, 1, 0, 0, 0, 5e8, time.FixedZone("", -3*3600)), "2026-01-01T00:00:00.5-03:00", false},
		{time.Date(1900, 1, 1, 0, 9, 21, 0, lmt), "1900-01-01T00:00:00Z", false},
		{time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("", 15*3600)), "2025-12-31T09:00:00Z", false},
		{time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), "", true},
		{time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), "", true},
	}
	for _, tt := range tests {
		got, err := appendTime(nil, tt.t)
		if (err != nil) != tt.wantErr || string(got) != tt.want {
			t.Errorf("appendTime(%v) = %q, %v; want %q (error %v)", tt.t, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestAppendErrors(t *testing.T) {
	greet := mustCodec[Greeting](t)
	order := mustCodec[Order](t)
	tests := []struct {
		name string
		c    *Codec
		v    any
		want string
	}{
		{"wrong type", greet, &GreetingResponse{}, "codec: cannot encode payload: Greeting: got *codec.GreetingResponse, want codec.Greeting or *codec.Greeting"},
		{"nil", greet, nil, "got <nil>"},
		{"nil pointer", greet, (*Greeting)(nil), "Greeting: nil pointer"},
		{"bad enum", order, &Order{Prio: "urgent"}, `Order: Prio: "urgent": value is not one of the enumeration ["low" "high"]`},
		{"nested path", order, &Order{Prio: "low", Items: []Item{{}, {}}, When: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}, "Order: When: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := []byte("keep")
			got, err := tt.c.Append(dst, tt.v, false)
			if !errors.Is(err, ErrEncode) {
				t.Fatalf("Append = %v, want ErrEncode", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
			if string(got) != "keep" {
				t.Errorf("a failed Append left %q in dst, want it unchanged", got)
			}
		})
	}
}

// TestAppendValidatesWithXmllint checks that encoded payloads, extreme values
// included, validate against the XSD gen derives from the same type.
func TestAppendValidatesWithXmllint(t *testing.T) {
	if _, err := exec.LookPath("xmllint"); err != nil {
		t.Skip("xmllint not installed (apt-get install libxml2-utils)")
	}
	tests := []struct {
		name string
		c    *Codec
		v    any
	}{
		{"order full", mustCodec[Order](t), fullOrder()},
		{"order minimal", mustCodec[Order](t), &Order{Prio: "low"}},
		{"all kinds full", mustCodec[AllKinds](t), fullAllKinds()},
		{"all kinds zero", mustCodec[AllKinds](t), &AllKinds{Mode: "on"}},
		{"greeting with hostile text", mustCodec[Greeting](t), &Greeting{Name: "</Name>\x00&\r\n\"]]>"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := tt.c.Append(nil, tt.v, false)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			xsd, doc := filepath.Join(dir, "s.xsd"), filepath.Join(dir, "d.xml")
			if err := os.WriteFile(xsd, gen.XSD(tt.c.Type()), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(doc, b, 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command("xmllint", "--noout", "--nonet", "--schema", xsd, doc).CombinedOutput()
			if err != nil {
				t.Errorf("xmllint: %v\n%s\n%s", err, out, b)
			}
		})
	}
}
