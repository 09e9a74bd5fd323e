// Package console is the organism's line console: `@listener text` sends a
// message from "console" to a listener, `/help`, `/status`, `/listeners`
// (`/targets`), `/config`, `/threads`, `/monitor`, `/buffer`, `/usage`,
// `/new`, `/clear` and `/quit` (and the commands /help lists) inspect,
// steer and leave, and what the organism says back (response-handler's output,
// replies that prune back to the console, <huh> failures of the console's
// own conversations) is printed as `[sender] text`.
//
// Successive `@agent` lines to one agent continue one conversation with it
// — the console sends them on the conversation's thread id, where the agent
// finds its history — until `/new agent` (or `/new` for every agent); a
// line to a listener that is no agent always begins a new conversation.
// The terminal prompt names the conversation the last line used
// (`poet#3f2a> `) and `/threads` lists them.
//
// The console talks to the organism only through an organism.Backend (the
// organism's client facade, in package organism), so the same console runs
// in-process (organism.Local, over *organism.Organism) or remotely (Remote,
// over the main bus's /ws). On a terminal it uses golang.org/x/term
// for line editing and history, asynchronous output never garbles the
// prompt, and an agent's text shows as the model writes it (its unfinished
// line live above the prompt, then only what the answer adds); on a pipe it
// reads plain lines, prints each answer once, whole, and waits (bounded) for
// each conversation it starts to complete before reading the next line, so
// scripted sessions print deterministic transcripts.
package console
