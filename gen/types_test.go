package gen

import (
	"encoding/xml"
	"time"
)

// The hello-world payloads (python-reference §6.2).
type Greeting struct {
	Name string
}

type GreetingResponse struct {
	Message        string
	OriginalSender string
}

type ShoutedResponse struct {
	Message string
}

// Order exercises every mapping: namespace, attribute, wrapper, repeated,
// sized ints, optional pointer, enum, time, bytes, omitempty, nested types.
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
	Shipping Address `doc:"where it goes"`
	//lint:ignore U1000 the unexported field is the case under test: Describe must skip it
	internal int    // unexported: skipped
	Skipped  string `xml:"-"`
}

type Item struct {
	SKU   string `xml:"sku,attr"`
	Count uint16 `doc:"units of this item"`
	Gift  *bool
	Unit  float32
}

type Address struct {
	Street string
	Geo    struct {
		Lat, Lon float64
	}
}
