package relabel

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that the filter's workers do not outlive the tests.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
