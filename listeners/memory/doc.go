// Package memory is the agents' memory with consent (Agent OS memory law):
// an agent with memory gets two functions its loop answers itself
// (llm.LocalTool), remember and recall. Memories belong to the user who
// began the conversation (xmlpipe.Metadata.User; the organism's own
// traffic has a space of its own) and live in the store's memory table,
// searched with FTS5.
//
// remember never stores anything itself: it sends a Remember message to
// the organism's memory listener (ListenerName), and the organism's
// governance decides whether it is delivered — at once under consent
// always, after a human approves it under ask (an approval of kind memory,
// held like any approval and surviving a restart), never under never.
// Only the listener stores, once delivered, and records the consent that
// let the memory in. Prohibited content (private keys, API keys and
// tokens, passwords, card numbers, SSNs, long random secrets: Prohibited)
// is refused whatever the policy, by the tool before anything is sent and
// again by the listener.
package memory
