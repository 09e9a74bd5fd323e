package stage

import (
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/internal/lx"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/internal/payloadschema"
)

// benchPayload is a two-field payload like hello's GreetingResponse.
type benchPayload struct {
	Message        string
	OriginalSender string
}

// benchEnvelope is a ~600-byte pretty-printed envelope (the size go-deps.md used).
var benchEnvelope = []byte(`<?xml version="1.0" encoding="UTF-8"?>
<message xmlns="https://xml-pipeline.org/ns/envelope/v1">
  <meta>
    <from>greeter</from>
    <to>shouter</to>
    <thread>6f1c2a8e-1d3b-4c5e-9f7a-0b1c2d3e4f50</thread>
  </meta>
  <!-- one comment, as in the go-deps benchmark message -->
  <benchPayload xmlns="">
    <Message>` + strings.Repeat("Hello Dan, what a pleasure to greet you! ", 8) + `</Message>
    <OriginalSender>response-handler</OriginalSender>
  </benchPayload>
</message>`)

func benchSetup(b *testing.B) (*Ingress, *xmlpipe.PayloadType) {
	b.Helper()
	in := newTestIngress(b)
	pt, err := xmlpipe.PayloadTypeOf[benchPayload]()
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(benchEnvelope)))
	return in, pt
}

// BenchmarkFloor is libxml2 alone: strict parse + envelope validation +
// payload validation of the same document + free — the floor the whole chain
// is compared with (target: chain within 2.5× of it).
func BenchmarkFloor(b *testing.B) {
	in, pt := benchSetup(b)
	b.ReportAllocs()
	for b.Loop() {
		doc, errs := lx.Parse(benchEnvelope, lx.OptNoNet|lx.OptNoBlanks)
		if doc == nil || errs.Severe() {
			b.Fatal(errs)
		}
		if e := in.envelope.Validate(doc); e != nil {
			b.Fatal(e)
		}
		payload := doc.Root().FirstElement().NextElement()
		if e := payloadschema.Of(pt).ValidateElement(payload); e != nil {
			b.Fatal(e)
		}
		doc.Free()
	}
}

// BenchmarkStageParse is stage 2 alone (strict parse + free).
func BenchmarkStageParse(b *testing.B) {
	benchSetup(b)
	b.ReportAllocs()
	for b.Loop() {
		doc, _ := lx.Parse(benchEnvelope, lx.OptNoNet|lx.OptNoBlanks)
		doc.Free()
	}
}

// BenchmarkStageC14N is stage 4 on a parsed document.
func BenchmarkStageC14N(b *testing.B) {
	benchSetup(b)
	doc, _ := lx.Parse(benchEnvelope, lx.OptNoNet|lx.OptNoBlanks)
	defer doc.Free()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := doc.C14N(lx.Node{}, lx.C14NExc10, false, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkIsExcC14N is the byte scan that lets Read skip stage 4: proving a
// 603-byte AppendEnvelope envelope canonical (compare BenchmarkStageC14N).
func BenchmarkIsExcC14N(b *testing.B) {
	_, pt := benchSetup(b)
	body, err := pt.AppendPayload(nil, &benchPayload{
		Message:        strings.Repeat("Hello Dan, what a pleasure to greet you! ", 8),
		OriginalSender: "response-handler",
	})
	if err != nil {
		b.Fatal(err)
	}
	env := AppendEnvelope(nil, "greeter", "shouter", "6f1c2a8e-1d3b-4c5e-9f7a-0b1c2d3e4f50", body)
	if !isExcC14N(env) {
		b.Fatalf("envelope not proven canonical: %s", env)
	}
	b.SetBytes(int64(len(env)))
	b.ReportAllocs()
	for b.Loop() {
		if !isExcC14N(env) {
			b.Fatal("not canonical")
		}
	}
}

// BenchmarkStageEnvelopeValidate is stage 5's schema check on a parsed document.
func BenchmarkStageEnvelopeValidate(b *testing.B) {
	in, _ := benchSetup(b)
	doc, _ := lx.Parse(benchEnvelope, lx.OptNoNet|lx.OptNoBlanks)
	defer doc.Free()
	b.ReportAllocs()
	for b.Loop() {
		if e := in.envelope.Validate(doc); e != nil {
			b.Fatal(e)
		}
	}
}

// BenchmarkStageRead is stages 1–5 (Ingress.Read + Close).
func BenchmarkStageRead(b *testing.B) {
	in, _ := benchSetup(b)
	b.ReportAllocs()
	for b.Loop() {
		m, err := in.Read(benchEnvelope)
		if err != nil {
			b.Fatal(err)
		}
		m.Close()
	}
}

// BenchmarkStagePayload is stage 7 on a read message: payload validation,
// payload C14N and decode.
func BenchmarkStagePayload(b *testing.B) {
	in, pt := benchSetup(b)
	m, err := in.Read(benchEnvelope)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := m.Decode(pt); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStageEncode is the egress side: encode a payload and build the envelope.
func BenchmarkStageEncode(b *testing.B) {
	_, pt := benchSetup(b)
	v := &benchPayload{Message: strings.Repeat("Hello Dan! ", 30), OriginalSender: "response-handler"}
	buf := make([]byte, 0, 1024)
	b.ReportAllocs()
	for b.Loop() {
		body, err := pt.AppendPayload(buf[:0], v)
		if err != nil {
			b.Fatal(err)
		}
		_ = AppendEnvelope(make([]byte, 0, 1024), "greeter", "shouter", "6f1c2a8e-1d3b-4c5e-9f7a-0b1c2d3e4f50", body)
	}
}

// BenchmarkChain is the whole ingress chain of one message: every stage from
// raw bytes to a decoded Go value.
func BenchmarkChain(b *testing.B) {
	in, pt := benchSetup(b)
	b.ReportAllocs()
	for b.Loop() {
		m, err := in.Read(benchEnvelope)
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := m.Decode(pt); err != nil {
			b.Fatal(err)
		}
		m.Close()
	}
}

// BenchmarkChainParallel is BenchmarkChain on every core.
func BenchmarkChainParallel(b *testing.B) {
	in, pt := benchSetup(b)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m, err := in.Read(benchEnvelope)
			if err != nil {
				b.Fatal(err)
			}
			if _, _, err := m.Decode(pt); err != nil {
				b.Fatal(err)
			}
			m.Close()
		}
	})
}
