package store

// profilesV14 (migration 14) keeps the security profiles (seed 000 §8.4)
// of the kernel state: each main-bus user's (the profile of the
// conversations the user begins, "" for none) and each thread's (fixed when
// the thread was created, so a restart restores it and never widens it).
const profilesV14 = `
ALTER TABLE users ADD COLUMN profile TEXT NOT NULL DEFAULT '';
ALTER TABLE threads ADD COLUMN profile TEXT NOT NULL DEFAULT '';
`
