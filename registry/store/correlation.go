package store

// correlationRefsV12 (migration 12) keeps the correlation refs of the
// kernel state: the ref a thread was opened with (a message an agent sent
// for one of its model's tool calls) and the ref a context-buffer slot's
// message answers, so that a restart in the middle of an agent's tool calls
// still binds each answer to its call.
const correlationRefsV12 = `
ALTER TABLE threads ADD COLUMN ref TEXT NOT NULL DEFAULT '';
ALTER TABLE slots ADD COLUMN in_reply_to TEXT NOT NULL DEFAULT '';
`
