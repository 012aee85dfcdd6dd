package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/internal/bench"
)

func TestPlotFromReport(t *testing.T) {
	rep := bench.Report{ModelLatencyMS: 1000, ModelTimeMS: 6000, Throughput: []bench.Throughput{
		{Concurrency: 1, WallS: 7.1}, {Concurrency: 50, WallS: 9.4}, {Concurrency: 200, WallS: 21.8},
	}}
	data, err := json.Marshal(rep)
	require.NoError(t, err)
	dir := t.TempDir()
	report, png := filepath.Join(dir, "bench.json"), filepath.Join(dir, "out.png")
	require.NoError(t, os.WriteFile(report, data, 0o644))

	require.NoError(t, run([]string{"-o", png, report}, nil))
	b, err := os.ReadFile(png)
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")), "not a PNG")

	// From standard input too.
	png2 := filepath.Join(dir, "stdin.png")
	require.NoError(t, run([]string{"-o", png2}, bytes.NewReader(data)))
	require.FileExists(t, png2)
}

func TestPlotRefusesWhatItCannotDraw(t *testing.T) {
	png := filepath.Join(t.TempDir(), "out.png")
	err := run([]string{"-o", png}, strings.NewReader(`{"throughput":[]}`))
	require.ErrorContains(t, err, "no throughput runs")
	err = run([]string{"-o", png}, strings.NewReader(`not json`))
	require.ErrorContains(t, err, "conclave bench --json")
	require.NoFileExists(t, png)
}
