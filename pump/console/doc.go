// Package console is the organism's line console: `@listener text` sends a
// message from "console" to a listener, `/help`, `/status`, `/listeners`,
// `/threads`, `/monitor` and `/quit` inspect and leave, and what the organism
// says back (response-handler's output, replies that prune back to the
// console, <huh> failures of the console's own conversations) is printed as
// `[sender] text`.
//
// The console talks to the organism only through a Backend, so the same
// console runs in-process (Local, over *organism.Organism) or, later, remotely.
// On a terminal it uses golang.org/x/term for line editing and history, and
// asynchronous output never garbles the prompt; on a pipe it reads plain lines
// and waits (bounded) for each conversation it starts to complete before
// reading the next line, so scripted sessions print deterministic transcripts.
package console
