package store

// userProfilesV13 (migration 13) gives each main-bus user a security
// profile (seed 000 §8.4): the profile of the conversations the user
// begins, "" for none.
const userProfilesV13 = `
ALTER TABLE users ADD COLUMN profile TEXT NOT NULL DEFAULT '';
`
