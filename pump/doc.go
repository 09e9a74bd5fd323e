// Package pump is the organism's message pump: ingress workers run every envelope
// through the xmlpipe stages, the routing table resolves targets (by <to> or by
// payload root tag, broadcast groups concurrently), each listener owns a bounded
// pipeline with its own workers, and handler responses re-enter the full chain
// with <from> and <thread> injected from the private thread registry.
//
// Every failure becomes a <huh> to the sender (an external outlet or the
// listener's optional error handler); nothing is silently dropped.
package pump
