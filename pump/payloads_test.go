package pump_test

import "encoding/xml"

// Payload types of the conformance tests. Each root tag is the Go type name.

// Ping is the general-purpose test payload.
type Ping struct {
	Text string
}

// Pong is a second payload with the same shape as Ping but another root tag.
type Pong struct {
	Text string
}

// PingTwin has Ping's root tag but is another Go type (broadcast groups must
// share one type).
type PingTwin struct {
	XMLName xml.Name `xml:"Ping"`
	Text    string
}

// ChainA, ChainB and ChainC are the payloads of the a → b → c prune chain.
type ChainA struct{ Text string }

// ChainB is b's payload.
type ChainB struct{ Text string }

// ChainC is c's payload.
type ChainC struct{ Text string }

// Fan is the payload of the sub-thread cascade test.
type Fan struct{ Step string }

// Slow is handled by a listener that blocks until released.
type Slow struct{ Text string }

// Bounce is answered straight back to its sender.
type Bounce struct{ Text string }

// News is the broadcast payload.
type News struct{ Headline string }

// SoloStep drives the self-iterating agent.
type SoloStep struct{ N int }

// Job is queued on a single-worker listener (scheduling and limits).
type Job struct{ Label string }

// Batch is one outside message whose listener sends a Job for each label,
// so that one conversation queues several deliveries at once.
type Batch struct {
	Labels []string `xml:"Labels>Label"`
}

// Relay forwards itself Hops times, then sends a Job to the sink.
type Relay struct {
	Label string
	Hops  int
}

// Empty has no fields: its element is empty (reference quirk Q12).
type Empty struct{}

// Maybe has an optional field.
type Maybe struct {
	Note *string
	N    int
}

// ConsoleInput is the console-router payload of the reference's routing-chain test.
type ConsoleInput struct {
	Text   string
	Target string
}
