package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDevRunHintNamesAnotherUI(t *testing.T) {
	require.Equal(t, `TEMPORAL_ADDRESS=127.0.0.1:7233 ./bin/conclave run --config team.yaml "your task"`,
		devRunHint("127.0.0.1:7233", "http://127.0.0.1:8233", "team.yaml"))
	// run's links point at 8233 unless told otherwise.
	require.Equal(t, `TEMPORAL_ADDRESS=127.0.0.1:7233 CONCLAVE_UI=http://127.0.0.1:18233 ./bin/conclave run --config team.yaml "your task"`,
		devRunHint("127.0.0.1:7233", "http://127.0.0.1:18233", "team.yaml"))
}

func TestDevCommandKeepsTheDB(t *testing.T) {
	require.Equal(t, "./bin/conclave dev", devCommand(defaultDevDB()))
	require.Equal(t, "./bin/conclave dev --db /tmp/demo/t.db", devCommand("/tmp/demo/t.db"))
	require.Equal(t, `./bin/conclave dev --db '/tmp/my demo/it'\''s.db'`, devCommand("/tmp/my demo/it's.db"))
}
