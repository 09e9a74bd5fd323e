package codec

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Search is a mounted-tool-like payload: optional scalars as pointers (so
// presence survives decoding), a JSON-valued field and a repeated one.
type Search struct {
	Query  string
	Limit  *int64   `xml:",omitempty" jsonschema:"{\"default\":10,\"minimum\":0}"`
	Exact  *bool    `xml:",omitempty"`
	Prefix *string  `xml:",omitempty"`
	Filter *string  `xml:",omitempty" encoding:"json"`
	Tags   []string `xml:",omitempty"`
	Scores []float32
}

func TestAppendJSONPresence(t *testing.T) {
	c := mustCodec[Search](t)
	for _, tc := range []struct{ in, want string }{
		{`{"Query":"q","Limit":0,"Exact":false,"Prefix":""}`,
			`<Search><Query>q</Query><Limit>0</Limit><Exact>false</Exact><Prefix></Prefix></Search>`},
		{`{"Query":"q"}`, `<Search><Query>q</Query></Search>`},
		{`{"Query":"q","Limit":null,"Exact":null,"Tags":null}`, `<Search><Query>q</Query></Search>`},
		{`{"Query":"q","Limit":7.000,"Tags":["a","b"],"Scores":[1.5,-2e3]}`,
			`<Search><Query>q</Query><Limit>7</Limit><Tags>a</Tags><Tags>b</Tags><Scores>1.5</Scores><Scores>-2000</Scores></Search>`},
		{`{"Query":"<&>","Filter":{"b":[1,true,null],"a":"x<y"}}`,
			`<Search><Query>&lt;&amp;&gt;</Query><Filter>{"b":[1,true,null],"a":"x&lt;y"}</Filter></Search>`},
		{`{"Query":"q","Filter":"plain"}`, `<Search><Query>q</Query><Filter>"plain"</Filter></Search>`},
	} {
		b, err := AppendJSON(nil, c.Type(), []byte(tc.in), JSONOptions{})
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if string(b) != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.in, b, tc.want)
		}
		// What is written decodes, and its JSON form is what was given.
		v, err := c.Decode(b)
		if err != nil {
			t.Errorf("%s: decode %s: %v", tc.in, b, err)
			continue
		}
		back, err := JSONOf(c.Type(), v)
		if err != nil {
			t.Fatal(err)
		}
		again, err := json.Marshal(back)
		if err != nil {
			t.Fatal(err)
		}
		b2, err := AppendJSON(nil, c.Type(), again, JSONOptions{})
		if err != nil || string(b2) != string(b) {
			t.Errorf("%s: JSONOf %s → %s (%v), want %s", tc.in, again, b2, err, b)
		}
	}
	s := Search{Query: "q", Limit: new(int64), Exact: new(bool)}
	m, err := JSONOf(c.Type(), &s)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := json.Marshal(m); string(got) != `{"Exact":false,"Limit":0,"Query":"q"}` {
		t.Errorf("JSONOf: %s", got)
	}
}

func TestAppendJSONErrors(t *testing.T) {
	search := mustCodec[Search](t).Type()
	order := mustCodec[Order](t).Type()
	for _, tc := range []struct {
		name, in, want string
	}{
		{"number for string", `{"Query":5}`, `Query: want a string, got the number 5`},
		{"string for integer", `{"Query":"q","Limit":"5"}`, `Limit: want an integer, got the string "5"`},
		{"fraction", `{"Query":"q","Limit":1.5}`, `Limit: want an integer, got the number 1.5`},
		{"exponent", `{"Query":"q","Limit":1e3}`, `Limit: want an integer, got the number 1e3`},
		{"bool as string", `{"Query":"q","Exact":"true"}`, `Exact: want a boolean, got the string "true"`},
		{"scalar for array", `{"Query":"q","Tags":"a"}`, `Tags: want an array of a string, got the string "a"`},
		{"array item", `{"Query":"q","Tags":["a",1]}`, `Tags[1]: want a string, got the number 1`},
		{"null item", `{"Query":"q","Tags":[null]}`, `Tags[0]: want a string, got null`},
		{"missing", `{"Limit":1}`, `Query: missing (required, want a string)`},
		{"null required", `{"Query":null}`, `Query: missing`},
		{"unknown", `{"Query":"q","Lim":1}`, `unknown field "Lim" (the fields are Query, Limit, Exact, Prefix, Filter, Tags, Scores)`},
		{"duplicate key", `{"Query":"q","Query":"r"}`, `key "Query" appears twice`},
		{"not object", `["Query"]`, `want an object of fields, got an array`},
		{"trailing", `{"Query":"q"} {}`, `data after the value`},
		{"bad JSON", `{"Query":`, `invalid JSON`},
		{"invalid UTF-8", "{\"Query\":\"a\xff\"}", `not valid UTF-8 (byte 11)`},
		{"lone surrogate", `{"Query":"\ud800"}`, `unpaired surrogate`},
		{"control char", `{"Query":"a\u0001"}`, `Query: character U+0001 at byte 1 is not allowed in XML`},
		{"float32 range", `{"Query":"q","Scores":[1e39]}`, `Scores[0]: 1e39 is out of range`},
		{"deep", strings.Repeat(`{"Query":"q","Filter":`, 1) + strings.Repeat("[", 200) + strings.Repeat("]", 200) + "}", `nested deeper than 128`},
	} {
		_, err := AppendJSON(nil, search, []byte(tc.in), JSONOptions{})
		var je *JSONError
		if !errors.Is(err, ErrJSON) || !errors.As(err, &je) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %s: err = %v, want %q", tc.name, tc.in, err, tc.want)
		}
	}
	for _, tc := range []struct {
		name, in, want string
	}{
		{"enum", `{"id":"1","Items":[],"Qty":1,"Prio":"mid","When":"2024-01-02T03:04:05Z","Blob":""}`, `Prio: "mid" is not one of "low", "high"`},
		{"int32 range", `{"id":"1","Items":[],"Qty":2147483648,"Prio":"low","When":"2024-01-02T03:04:05Z","Blob":""}`, `Qty: 2147483648 is out of range`},
		{"nested", `{"id":"1","Items":[{"sku":"a","Count":-1,"Unit":1}],"Qty":1,"Prio":"low","When":"2024-01-02T03:04:05Z","Blob":""}`, `Items[0].Count: -1 is out of range`},
		{"time", `{"id":"1","Qty":1,"Prio":"low","When":"yesterday","Blob":""}`, `When: "yesterday" is not a date-time string`},
		{"bytes", `{"id":"1","Qty":1,"Prio":"low","When":"2024-01-02T03:04:05Z","Blob":"***"}`, `Blob: "***" is not a base64 string`},
		{"object wanted", `{"id":"1","Qty":1,"Prio":"low","When":"2024-01-02T03:04:05Z","Blob":"","Shipping":"Main St"}`, `Shipping: want an object, got the string "Main St"`},
		{"nested missing", `{"id":"1","Qty":1,"Prio":"low","When":"2024-01-02T03:04:05Z","Blob":"","Shipping":{"Street":"x"}}`, `Shipping.Geo: missing`},
	} {
		_, err := AppendJSON(nil, order, []byte(tc.in), JSONOptions{})
		if !errors.Is(err, ErrJSON) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
	type Counter struct {
		N uint8 `xml:"n,attr"`
	}
	counter := mustCodec[Counter](t).Type()
	for in, want := range map[string]string{`{"n":-1}`: `n: -1 is out of range`, `{"n":256}`: `n: 256 is out of range`,
		`{"n":"1"}`: `n: want a non-negative integer, got the string "1"`} {
		if _, err := AppendJSON(nil, counter, []byte(in), JSONOptions{}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
}

func TestAppendJSONOrder(t *testing.T) {
	c := mustCodec[Order](t)
	want := fullOrder()
	want.Items[1].Unit = 2.5 // -Inf has no JSON form
	if _, err := JSONOf(c.Type(), fullOrder()); err == nil || !strings.Contains(err.Error(), "Items[1].Unit: -Inf has no JSON form") {
		t.Fatalf("JSONOf -Inf: %v", err)
	}
	m, err := JSONOf(c.Type(), want)
	if err != nil {
		t.Fatal(err)
	}
	in, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	b, err := AppendJSON(nil, c.Type(), in, JSONOptions{})
	if err != nil {
		t.Fatalf("%s: %v", in, err)
	}
	ref, err := c.Append(nil, want, false)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != string(ref) {
		t.Fatalf("JSON form %s\n wrote %s\n  want %s", in, b, ref)
	}
	got, err := c.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got, equalOpts); diff != "" {
		t.Fatalf("round trip (-want +got):\n%s", diff)
	}
	// An empty wrapped list given is an empty wrapper; EmptyNS only touches
	// payloads without a namespace.
	b, err = AppendJSON(nil, c.Type(), []byte(`{"id":"x","Items":[],"Qty":1,"Prio":"low","When":"2024-01-02T03:04:05Z","Blob":""}`), JSONOptions{EmptyNS: true})
	if err != nil || !strings.Contains(string(b), `<Items></Items>`) || !strings.HasPrefix(string(b), `<Order xmlns="https://xml-pipeline.org/ns/shop/order/v1" id="x">`) {
		t.Fatalf("%s %v", b, err)
	}
}

func TestAppendJSONFoldNames(t *testing.T) {
	c := mustCodec[GreetingResponse](t)
	in := `{"message":"hi","original_sender":"x"}`
	if _, err := AppendJSON(nil, c.Type(), []byte(in), JSONOptions{}); err == nil {
		t.Fatal("folded names accepted without FoldNames")
	}
	b, err := AppendJSON(nil, c.Type(), []byte(in), JSONOptions{FoldNames: true, EmptyNS: true})
	if err != nil || string(b) != `<GreetingResponse xmlns=""><Message>hi</Message><OriginalSender>x</OriginalSender></GreetingResponse>` {
		t.Fatalf("%s %v", b, err)
	}
	if _, err := AppendJSON(nil, c.Type(), []byte(`{"message":"a","Message":"b","OriginalSender":"x"}`), JSONOptions{FoldNames: true}); err == nil ||
		!strings.Contains(err.Error(), "given twice") {
		t.Fatalf("two keys for one field: %v", err)
	}
	// An empty payload type takes {} and nothing (null, empty input).
	type Ping struct{}
	p := mustCodec[Ping](t)
	for _, in := range []string{`{}`, ``, `null`} {
		if b, err := AppendJSON(nil, p.Type(), []byte(in), JSONOptions{}); err != nil || string(b) != `<Ping></Ping>` {
			t.Errorf("%q: %s %v", in, b, err)
		}
	}
	if _, err := AppendJSON(nil, p.Type(), []byte(`{"x":1}`), JSONOptions{}); err == nil || !strings.Contains(err.Error(), "it has no fields") {
		t.Errorf("field for an empty type: %v", err)
	}
}

// FuzzAppendJSON feeds arbitrary JSON to AppendJSON for several payload
// types: it must never panic, what it writes must decode, and the decoded
// value's JSON form must write the same bytes again.
func FuzzAppendJSON(f *testing.F) {
	f.Add([]byte(`{"Query":"q","Limit":0,"Exact":false,"Filter":{"a":[1]},"Tags":["x"]}`))
	f.Add([]byte(`{"id":"1","Items":[{"sku":"a","Count":1,"Unit":1}],"Qty":1,"Prio":"low","When":"2024-01-02T03:04:05Z","Blob":"AA=="}`))
	f.Add([]byte(`{"Name":"\ud83d\ude00"}`))
	f.Add([]byte("{\"Name\":\"\xff\"}"))
	codecs := []*Codec{mustCodec[Greeting](f), mustCodec[Search](f), mustCodec[Order](f), mustCodec[AllKinds](f)}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, c := range codecs {
			for _, opts := range []JSONOptions{{}, {FoldNames: true, EmptyNS: true}} {
				b, err := AppendJSON(nil, c.Type(), data, opts)
				if err != nil {
					if !errors.Is(err, ErrJSON) {
						t.Fatalf("%s: error does not wrap ErrJSON: %v", c.Type().Name, err)
					}
					continue
				}
				if err := wellFormed(b); err != nil {
					t.Fatalf("%s: not well-formed: %v\n%q", c.Type().Name, err, b)
				}
				v, err := c.Decode(b)
				if err != nil {
					t.Fatalf("%s: %q wrote %q, which does not decode: %v", c.Type().Name, data, b, err)
				}
				m, err := JSONOf(c.Type(), v)
				if err != nil {
					t.Fatalf("%s: JSONOf: %v", c.Type().Name, err)
				}
				again, err := json.Marshal(m)
				if err != nil {
					t.Fatal(err)
				}
				b2, err := AppendJSON(nil, c.Type(), again, opts)
				if err != nil || string(b2) != string(b) {
					t.Fatalf("%s: %q wrote %q; its JSON form %s wrote %q (%v)", c.Type().Name, data, b, again, b2, err)
				}
			}
		}
	})
}
