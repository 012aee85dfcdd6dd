//go:build integration

package integration

import (
	"os"
	"testing"
)

// TestMain lets the workers these tests start call the scripted model
// servers, which listen on loopback: a shared worker refuses loopback and
// private model hosts unless its operator allows them. Tests of that
// refusal turn it off again for their own worker.
func TestMain(m *testing.M) {
	_ = os.Setenv("CONCLAVE_ALLOW_PRIVATE_MODEL_HOSTS", "1")
	os.Exit(m.Run())
}
