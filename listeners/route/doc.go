// Package route is semantic routing (seed 000 §10): a caller describes what
// it needs in words and the router finds the capability — the listener —
// that does it, builds its request and sends it, so that an agent need not
// know tool names or payload schemas ("I need to read main.rs").
//
// # The pipeline
//
// Router.Route runs the five steps of §10.3, in this order:
//
//  1. Rank: the need is embedded and compared (cosine similarity) with the
//     index of every capability's Document — its name, description,
//     payload root, field names and field docs.
//  2. Mask: the caller's Mask — its allowed set (an agent's peers, a user's
//     visible listeners, later a profile's dispatch table) — removes every
//     candidate it may not use. Masking comes before filling, so no effort
//     (no model call) is spent on a capability that would be refused.
//  3. Select: the best remaining candidate. When none remains — all
//     masked, or none matched — the answer is the refusal "no matching
//     capability in your profile" (*RefusalError, ErrNoCapability), the same
//     in both cases so that a caller learns nothing of what lies outside
//     its mask.
//  4. Fill: the Filler builds the selected listener's payload from the
//     need: the Ladder of models (cheap first, the next on a validation
//     failure; structured output with the payload's JSON Schema), or
//     without models the deterministic Extractive filler. Every payload is
//     checked with CheckPayload (codec.AppendJSON, then the listener's XSD).
//  5. Dispatch: the Dispatcher sends it through the pump.
//
// Router.Plan stops before the dispatch (what `xmlpipe route --fill`
// prints); Router.Rank stops after the mask (what `xmlpipe route` prints).
//
// # The router is advisory
//
// Semantic routing is a convenience layer; the dispatch table is the
// authority (§10.5). The mask keeps what the caller may not use out of the
// candidates, and the dispatch goes through the pump's standard pipeline,
// whose checks — routing, an agent's peers, the payload's schema — apply to
// whatever the router chose. Nothing here can make a message reach a
// listener the pump would refuse.
//
// # Embeddings
//
// An Embedder turns texts into vectors. TFIDF is built in and the default:
// no network, deterministic, with a light stemmer, stop words and a small
// documented concept table (concepts.go), so "multiply six by seven" finds
// a calculator described as "evaluates an arithmetic expression". NewOpenAI
// and NewOllama use an embeddings endpoint (/v1/embeddings, /api/embed). The
// index is rebuilt when its Source's version changes (a reload, a listener
// registered over OOB); with an API embedder only new or changed
// descriptions are embedded again. Ranking 1,000 descriptions takes about
// 0.2 ms per need with TF-IDF and about 1 ms with 768-dimension vectors
// (BenchmarkRank1000, BenchmarkRank1000Dense).
//
// # The route tool
//
// An agent loop offers the router as a tool: ToolSpec is the function, a
// call's arguments go through ParseToolArgs, the router runs with the
// agent's own mask and a Dispatcher that sends as the agent on its thread
// (Router.WithDispatcher), and ToolAnswer renders the result for the model:
//
//	need, err := route.ParseToolArgs(call.Arguments)
//	res, err := router.WithDispatcher(asAgent).Route(ctx, need, peersMask)
//	text, isError := route.ToolAnswer(res, err)
//
// This package knows nothing of the pump: the organism adapts its routing
// table into a Source (pump/organism) and supplies the Dispatcher.
package route
