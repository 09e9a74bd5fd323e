package codec

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/xml-pipeline/xmlpipe/gen"
)

// equalOpts compare decoded values: NaN equals NaN, nil equals empty, and
// time.Time compares instants (its Equal method).
var equalOpts = cmp.Options{cmpopts.EquateNaNs(), cmpopts.EquateEmpty()}

func ptr[T any](v T) *T { return &v }

// mustCodec returns the codec of T or fails the test.
func mustCodec[T any](t testing.TB) *Codec {
	t.Helper()
	c, err := For(reflect.TypeFor[T]())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func fullOrder() *Order {
	o := &Order{
		ID: `A-1 "quoted" & <tagged>`,
		Items: []Item{
			{SKU: "sku-1", Count: 65535, Gift: ptr(true), Unit: 0.1},
			{SKU: "", Count: 0, Unit: float32(math.Inf(-1))},
		},
		Tags:     []string{"", " spaced ", "007"},
		Qty:      math.MinInt32,
		Note:     ptr("line1\nline2\r\nline3\ttab"),
		Prio:     "high",
		When:     time.Date(2026, 1, 18, 12, 0, 0, 123456000, time.FixedZone("", 5*3600+30*60)),
		Blob:     []byte{0, 1, 2, 0xff},
		Price:    1e-7,
		Shipping: &Address{Street: "Main St. 1"},
	}
	o.Shipping.Geo.Lat, o.Shipping.Geo.Lon = -33.8688, 151.2093
	return o
}

func fullAllKinds() *AllKinds {
	return &AllKinds{
		Base: Base{Trace: "t\t1"},
		AInt: math.MinInt64, AU64: math.MaxUint64, AF: float32(math.NaN()), ABool: ptr(false),
		AStr: "a\"b'c", ABytes: []byte("attr bytes"),
		S: "\u00e9\U0001F600 ]]> &amp;", I: math.MaxInt64, I8: math.MinInt8, I16: math.MaxInt16,
		I32: math.MinInt32, I64: math.MinInt64, U: math.MaxUint, U8: math.MaxUint8, U16: math.MaxUint16,
		U32: math.MaxUint32, U64: math.MaxUint64, F32: math.MaxFloat32, F64: math.SmallestNonzeroFloat64,
		B: true, T: time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC), Raw: []byte("raw"),
		PS: ptr(""), PI: ptr(int64(-1)), PT: ptr(time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)), PRaw: ptr([]byte{}),
		OS: "set", OT: time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("", -14*3600)), OI: []int{1, -2},
		RS: []string{"a", "", "c"}, RI: []int16{-1, 0, 1}, RF: []float64{math.Inf(1), math.NaN(), math.Copysign(0, -1), 1e300},
		RB: []bool{true, false}, RT: []time.Time{time.Unix(0, 1).UTC()}, RRaw: [][]byte{{1}, {}, {2, 3}},
		RW: []uint32{7, 8}, Subs: []Sub{{Key: "k", Val: &Sub2{X: -8}}, {Key: "empty"}}, Mode: "off",
	}
}

func TestRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		v    any
	}{
		{"greeting", &Greeting{Name: "Dan"}},
		{"greeting response", &GreetingResponse{Message: "Hello Dan!", OriginalSender: "response-handler"}},
		{"empty strings", &GreetingResponse{}},
		{"order full", fullOrder()},
		{"order minimal", &Order{Prio: "low"}},
		{"all kinds full", fullAllKinds()},
		{"all kinds zero", &AllKinds{Mode: "on"}},
	}
	for _, tt := range tests {
		for _, emptyNS := range []bool{false, true} {
			t.Run(tt.name, func(t *testing.T) {
				c, err := For(reflect.TypeOf(tt.v))
				if err != nil {
					t.Fatal(err)
				}
				b, err := c.Append([]byte("prefix:"), tt.v, emptyNS)
				if err != nil {
					t.Fatal(err)
				}
				b = b[len("prefix:"):]
				if err := wellFormed(b); err != nil {
					t.Fatalf("Append output is not well-formed: %v\n%s", err, b)
				}
				got, err := c.Decode(b)
				if err != nil {
					t.Fatalf("Decode: %v\n%s", err, b)
				}
				if diff := cmp.Diff(tt.v, got, equalOpts); diff != "" {
					t.Errorf("round trip (-want +got):\n%s\nXML: %s", diff, b)
				}
				// By value encodes the same bytes.
				b2, err := c.Append(nil, reflect.ValueOf(tt.v).Elem().Interface(), emptyNS)
				if err != nil || string(b2) != string(b) {
					t.Errorf("Append(T) = %s, %v; want %s", b2, err, b)
				}
			})
		}
	}
}

// wellFormed parses b with encoding/xml, an independent parser.
func wellFormed(b []byte) error {
	d := xml.NewDecoder(bytes.NewReader(b))
	for {
		if _, err := d.Token(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

func TestConcurrentUse(t *testing.T) {
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			c, err := For(reflect.TypeFor[*Order]())
			if err != nil {
				t.Error(err)
				return
			}
			want := fullOrder()
			want.Qty = int32(i)
			for range 50 {
				b, err := c.Append(nil, want, false)
				if err != nil {
					t.Error(err)
					return
				}
				got, err := c.Decode(b)
				if err != nil {
					t.Error(err)
					return
				}
				if diff := cmp.Diff(want, got, equalOpts); diff != "" {
					t.Errorf("concurrent round trip (-want +got):\n%s", diff)
					return
				}
			}
		})
	}
	wg.Wait()
	a, _ := For(reflect.TypeFor[Order]())
	b, _ := For(reflect.TypeFor[*Order]())
	if a != b {
		t.Errorf("For(Order) and For(*Order) returned different codecs")
	}
}

func TestForErrors(t *testing.T) {
	type withMap struct{ M map[string]int }
	for _, typ := range []reflect.Type{nil, reflect.TypeFor[int](), reflect.TypeFor[withMap]()} {
		c, err := For(typ)
		if c != nil || !errors.Is(err, gen.ErrUnsupported) {
			t.Errorf("For(%v) = %v, %v; want gen.ErrUnsupported", typ, c, err)
		}
	}
	c := mustCodec[Order](t)
	if c.Type().Name != "Order" || c.Type().Namespace != "https://xml-pipeline.org/ns/shop/order/v1" {
		t.Errorf("Type() = %+v", c.Type())
	}
}
