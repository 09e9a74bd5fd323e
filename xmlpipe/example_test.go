package xmlpipe_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// Greeting is a payload: the struct is the contract. Its XML root is the
// type name, its children the field names; the doc tags become the schema's
// documentation and the prompt other agents see.
type Greeting struct {
	Name string `doc:"who to greet"`
}

// Shout is the payload of the shouter.
type Shout struct {
	Text string `doc:"the text to shout"`
}

// A handler is a function over a pointer to its payload type; Typed adapts
// it to the Handler the pump calls. It forwards with Send (the thread
// extends to the listener named), answers its caller with Respond (the
// thread is pruned back), or returns nil to end the chain; an error becomes
// a <huh> to the sender.
func ExampleTyped() {
	greet := xmlpipe.Typed(func(ctx context.Context, g *Greeting, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		switch {
		case g.Name == "":
			return nil, errors.New("nobody to greet")
		case md.From == "shouter":
			return xmlpipe.Respond(&Shout{Text: "Hello again, " + g.Name}), nil
		}
		return xmlpipe.Send("shouter", &Shout{Text: "Hello, " + g.Name + "!"}), nil
	})

	// The pump calls Handle with the payload decoded and the metadata it
	// injects; here we call it directly.
	for _, md := range []xmlpipe.Metadata{{From: "console"}, {From: "shouter"}} {
		resp, err := greet.Handle(context.Background(), &Greeting{Name: "Dan"}, md)
		if err != nil {
			fmt.Println("error:", err)
			continue
		}
		switch r := resp.(type) {
		case *xmlpipe.SendResponse:
			fmt.Printf("from %s: send to %s: %s\n", md.From, r.To, r.Payload.(*Shout).Text)
		case *xmlpipe.RespondResponse:
			fmt.Printf("from %s: respond: %s\n", md.From, r.Payload.(*Shout).Text)
		}
	}
	if _, err := greet.Handle(context.Background(), &Greeting{}, xmlpipe.Metadata{From: "console"}); err != nil {
		fmt.Println("error:", err)
	}
	// Output:
	// from console: send to shouter: Hello, Dan!
	// from shouter: respond: Hello again, Dan
	// error: nobody to greet
}

// The payload contract derived from a Go type: the wire form of a value,
// and the schema every message for the listener is validated against.
func ExamplePayloadTypeOf() {
	pt, err := xmlpipe.PayloadTypeOf[Greeting]()
	if err != nil {
		fmt.Println(err)
		return
	}
	wire, err := pt.AppendPayload(nil, &Greeting{Name: "Ada & Bob"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(wire))
	v, err := pt.Decode(wire)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(v.(*Greeting).Name)
	fmt.Print(string(pt.XSD()))
	// Output:
	// <Greeting xmlns=""><Name>Ada &amp; Bob</Name></Greeting>
	// Ada & Bob
	// <xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" id="Greeting" elementFormDefault="qualified">
	//   <xs:complexType name="Greeting">
	//     <xs:sequence>
	//       <xs:element name="Name" type="xs:string">
	//         <xs:annotation>
	//           <xs:documentation>who to greet</xs:documentation>
	//         </xs:annotation>
	//       </xs:element>
	//     </xs:sequence>
	//   </xs:complexType>
	//   <xs:element name="Greeting" type="Greeting"/>
	// </xs:schema>
}
