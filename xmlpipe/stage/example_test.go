package stage_test

import (
	"errors"
	"fmt"

	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// Greeting is the payload of the examples.
type Greeting struct {
	Name string
}

// One message through the stages, as the pump runs them: an envelope built
// around an encoded payload, read by the ingress stages (parse, envelope
// validation, extraction, thread check, C14N), then validated against the
// listener's schema and decoded. A hostile message fails at a stage, and its
// sender is told only the canned text.
func Example() {
	pt, err := xmlpipe.PayloadTypeOf[Greeting]()
	if err != nil {
		fmt.Println(err)
		return
	}
	body, err := pt.AppendPayload(nil, &Greeting{Name: "Dan"})
	if err != nil {
		fmt.Println(err)
		return
	}
	env := stage.AppendEnvelope(nil, "console", "greeter", stage.NewThreadID(), body)

	in, err := stage.NewIngress(stage.IngressConfig{})
	if err != nil {
		fmt.Println(err)
		return
	}
	m, err := in.Read(env)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()
	fmt.Println(m.From, "→", m.To, m.PayloadName, stage.IsThreadID(m.Thread))
	v, _, err := m.Decode(pt)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("decoded:", v.(*Greeting).Name)

	_, err = in.Read([]byte(`<!DOCTYPE message [<!ENTITY boom "boom">]><message>&boom;</message>`))
	if f, ok := errors.AsType[*failure.Failure](err); ok {
		fmt.Printf("refused at %s: %q\n", f.Stage, f.Canned())
	}
	// Output:
	// console → greeter Greeting true
	// decoded: Dan
	// refused at parse: "Malformed message"
}

// Raw handler or LLM output becomes one payload per root element: the prose
// around them is dropped, a bare & is repaired, and each element comes out
// as exclusive C14N.
func ExampleSplitRaw() {
	out := []byte(`Here you go: <Greeting><Name>Ada & Bob</Name></Greeting> and <Shout xmlns="urn:x">hi</Shout>`)
	payloads, diags, err := stage.SplitRaw(out)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range payloads {
		fmt.Printf("{%s}%s %s\n", p.Namespace, p.Name, p.Bytes)
	}
	fmt.Println("repaired:", len(diags) > 0)
	// Output:
	// {}Greeting <Greeting><Name>Ada &amp; Bob</Name></Greeting>
	// {urn:x}Shout <Shout xmlns="urn:x">hi</Shout>
	// repaired: true
}
