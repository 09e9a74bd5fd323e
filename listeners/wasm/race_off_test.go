//go:build !race

package wasm

// raceEnabled: see race_on_test.go.
const raceEnabled = false
