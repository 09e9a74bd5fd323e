package codec

import (
	"encoding/xml"
	"time"
)

// The hello-world payloads.
type Greeting struct {
	Name string
}

type GreetingResponse struct {
	Message        string
	OriginalSender string
}

// Order is the brief's example payload: namespace, attribute, wrapper,
// repeated, optional, enum, time, bytes, omitempty, nested types.
type Order struct {
	XMLName  xml.Name `xml:"https://xml-pipeline.org/ns/shop/order/v1 Order"`
	ID       string   `xml:"id,attr" doc:"order id"`
	Items    []Item   `xml:"Items>Item"`
	Tags     []string
	Qty      int32 `doc:"how many"`
	Note     *string
	Prio     string `enum:"low|high"`
	When     time.Time
	Blob     []byte
	Price    float64 `xml:",omitempty"`
	Shipping *Address
}

type Item struct {
	SKU   string `xml:"sku,attr"`
	Count uint16
	Gift  *bool
	Unit  float32
}

type Address struct {
	Street string
	Geo    struct {
		Lat, Lon float64
	}
}

// Base is embedded (its fields are promoted) in AllKinds.
type Base struct {
	Trace string `xml:"trace,attr,omitempty"`
}

// AllKinds has one field of every supported kind, as element, optional
// element, repeated element and attribute.
type AllKinds struct {
	Base
	AInt   int     `xml:"aint,attr"`
	AU64   uint64  `xml:"au64,attr"`
	AF     float32 `xml:"af,attr"`
	ABool  *bool   `xml:"abool,attr"`
	AStr   string  `xml:"astr,attr,omitempty"`
	ABytes []byte  `xml:"abytes,attr"`

	S   string
	I   int
	I8  int8
	I16 int16
	I32 int32
	I64 int64
	U   uint
	U8  uint8
	U16 uint16
	U32 uint32
	U64 uint64
	F32 float32
	F64 float64
	B   bool
	T   time.Time
	Raw []byte

	PS   *string
	PI   *int64
	PT   *time.Time
	PRaw *[]byte
	OS   string    `xml:",omitempty"`
	OT   time.Time `xml:",omitempty"`
	OI   []int     `xml:"OIs>OI,omitempty"`

	RS   []string
	RI   []int16
	RF   []float64
	RB   []bool
	RT   []time.Time
	RRaw [][]byte
	RW   []uint32 `xml:"Wrapped>N"`
	Subs []Sub
	Mode Mode `enum:"on|off"`
}

type Sub struct {
	Key string `xml:"key,attr"`
	Val *Sub2
}

type Sub2 struct {
	X int8
}

// Mode is a named string type with an enumeration.
type Mode string
