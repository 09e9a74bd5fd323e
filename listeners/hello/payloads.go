// Package hello is the hello-world organism of the reference: greeter (an agent)
// → shouter → response-handler. `@greeter Dan` ends as `[shouter] HELLO, DAN!`.
package hello

// Greeting asks the greeter to greet someone.
type Greeting struct {
	Name string `doc:"who to greet"`
}

// GreetingResponse is the greeter's greeting, sent to the shouter.
type GreetingResponse struct {
	Message        string `doc:"the greeting text"`
	OriginalSender string `doc:"where the shouted greeting goes"`
}

// ShoutedResponse is the shouted greeting.
type ShoutedResponse struct {
	Message string `doc:"the greeting in capitals"`
}
