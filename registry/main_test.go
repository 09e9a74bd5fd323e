package registry

import (
	"testing"

	"github.com/google/uuid"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine they started is
// still running once they are done. It turns on the uuid package's pool of
// random bytes first, as every pump has it (xmlpipe/stage turns it on):
// thread ids are then minted without an allocation, as TestHopAllocations
// counts them.
func TestMain(m *testing.M) {
	uuid.EnableRandPool()
	goleak.VerifyTestMain(m, goleak.IgnoreCurrent())
}
