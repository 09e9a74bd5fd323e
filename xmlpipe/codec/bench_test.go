package codec

import "testing"

var greetingResponseXML = []byte(`<GreetingResponse><Message>Hello Dan!</Message><OriginalSender>response-handler</OriginalSender></GreetingResponse>`)

func BenchmarkDecodeGreetingResponse(b *testing.B) {
	c := mustCodec[GreetingResponse](b)
	b.ReportAllocs()
	b.SetBytes(int64(len(greetingResponseXML)))
	for b.Loop() {
		if _, err := c.Decode(greetingResponseXML); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendGreetingResponse(b *testing.B) {
	c := mustCodec[GreetingResponse](b)
	v := &GreetingResponse{Message: "Hello Dan!", OriginalSender: "response-handler"}
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = c.Append(buf[:0], v, true); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeOrder(b *testing.B) {
	c := mustCodec[Order](b)
	data, err := c.Append(nil, fullOrder(), false)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := c.Decode(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendOrder(b *testing.B) {
	c := mustCodec[Order](b)
	v := fullOrder()
	buf := make([]byte, 0, 1024)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = c.Append(buf[:0], v, false); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendGreetingResponseNew encodes into a new buffer each time, as
// the pump and the bus do for every payload they build.
func BenchmarkAppendGreetingResponseNew(b *testing.B) {
	c := mustCodec[GreetingResponse](b)
	v := &GreetingResponse{Message: "Hello Dan!", OriginalSender: "response-handler"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Append(nil, v, true); err != nil {
			b.Fatal(err)
		}
	}
}
