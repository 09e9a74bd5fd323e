package bus

import (
	"fmt"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// busFrame is a /bus envelope to slow whose payload has n bytes of text.
func busFrame(n int) []byte {
	return []byte(`<message xmlns="https://xml-pipeline.org/ns/envelope/v1"><meta><from>websocket:user-admin</from>` +
		`<to>slow</to><thread>` + stage.NewThreadID() + `</thread></meta><Stall xmlns=""><Text>` +
		strings.Repeat("x", n) + `</Text></Stall></message>`)
}

// BenchmarkBusFrameScan: what a /bus frame costs before the early busy
// check can answer it — finding its target (<to>, else its payload's root)
// and thread — by payload size: the whole frame scanned (full, what the
// check waited for before) or its head only (head, what it waits for now).
func BenchmarkBusFrameScan(b *testing.B) {
	scans := []struct {
		name string
		scan func([]byte) frameInfo
	}{{"full", scanFrame}, {"head", scanHead}}
	for _, n := range []int{16, 1 << 10, 16 << 10, 256 << 10} {
		data := busFrame(n)
		for _, sc := range scans {
			b.Run(fmt.Sprintf("%s/payload=%d", sc.name, n), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if info := sc.scan(data); !info.ok || info.to != "slow" {
						b.Fatalf("scan: %+v", info)
					}
				}
			})
		}
	}
}

// BenchmarkBusRefusedFrame: the whole of what a /bus frame refused early
// costs the bus besides the socket — finding its target, then its busy
// <huh> (which carries the frame back, base64) — by payload size, with the
// frame scanned in full (before) or its head only (now).
func BenchmarkBusRefusedFrame(b *testing.B) {
	core, err := stage.Core()
	if err != nil {
		b.Fatal(err)
	}
	s := &Server{core: core}
	scans := []struct {
		name string
		scan func([]byte) frameInfo
	}{{"full", scanFrame}, {"head", scanHead}}
	for _, n := range []int{16, 1 << 10, 16 << 10, 256 << 10} {
		data := busFrame(n)
		for _, sc := range scans {
			b.Run(fmt.Sprintf("%s/payload=%d", sc.name, n), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if info := sc.scan(data); !info.ok || info.to != "slow" {
						b.Fatalf("scan: %+v", info)
					}
					if huh := s.huhEnvelope("websocket:user-admin", "", &xmlpipe.Huh{Error: busyText + "; retry in 5 s",
						OriginalAttempt: data}); len(huh) == 0 {
						b.Fatal("no huh")
					}
				}
			})
		}
	}
}
