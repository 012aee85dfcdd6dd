// Command benchplot draws the chart in docs/benchmarks.md from a report of
// `conclave bench --json`. It is a command of its own so that the plotting
// library stays out of the conclave binary.
//
//	./bin/conclave bench --json > bench.json
//	go run ./cmd/benchplot -o docs/img/bench-concurrency.png bench.json
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/conclave-ai/conclave/internal/bench"
)

func main() {
	if err := run(os.Args[1:], os.Stdin); err != nil {
		fmt.Fprintln(os.Stderr, "benchplot:", err)
		os.Exit(1)
	}
}

func run(args []string, stdin io.Reader) error {
	fs := flag.NewFlagSet("benchplot", flag.ContinueOnError)
	out := fs.String("o", "bench-concurrency.png", "the PNG file to write")
	if err := fs.Parse(args); err != nil {
		return err
	}
	in, name := stdin, "standard input"
	switch fs.NArg() {
	case 0:
	case 1:
		f, err := os.Open(fs.Arg(0))
		if err != nil {
			return err
		}
		defer f.Close()
		in, name = f, fs.Arg(0)
	default:
		return errors.New("give at most one report file (default: standard input)")
	}
	var r bench.Report
	if err := json.NewDecoder(in).Decode(&r); err != nil {
		return fmt.Errorf("read %s: %w (expected the output of `conclave bench --json`)", name, err)
	}
	return plotThroughput(&r, *out)
}

// plotThroughput writes a PNG of the throughput runs: the wall time of n
// concurrent sessions against n, next to the time one session takes.
func plotThroughput(r *bench.Report, path string) error {
	if len(r.Throughput) == 0 {
		return fmt.Errorf("no throughput runs to plot")
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Concurrent 3-agent sessions on one worker (%d CPUs, %.0f ms per model call)",
		r.Machine.CPUs, r.ModelLatencyMS)
	p.X.Label.Text = "concurrent sessions"
	p.Y.Label.Text = "wall time until all completed (s)"
	pts := make(plotter.XYs, len(r.Throughput))
	labels := make([]string, len(r.Throughput))
	for i, t := range r.Throughput {
		pts[i].X, pts[i].Y = float64(t.Concurrency), t.WallS
		labels[i] = strconv.FormatFloat(t.WallS, 'f', 1, 64) + " s"
	}
	line, points, err := plotter.NewLinePoints(pts)
	if err != nil {
		return err
	}
	p.Add(line, points, plotter.NewGrid())
	l, err := plotter.NewLabels(plotter.XYLabels{XYs: pts, Labels: labels})
	if err != nil {
		return err
	}
	p.Add(l)
	p.Legend.Add("wall time", line, points)
	if r.ModelTimeMS > 0 {
		floor := plotter.XYs{{X: pts[0].X, Y: r.ModelTimeMS / 1000}, {X: pts[len(pts)-1].X, Y: r.ModelTimeMS / 1000}}
		fl, err := plotter.NewLine(floor)
		if err != nil {
			return err
		}
		fl.Dashes = []vg.Length{vg.Points(4), vg.Points(4)}
		p.Add(fl)
		p.Legend.Add("model time of one session", fl)
	}
	p.Legend.Top, p.Legend.Left = true, true
	p.Y.Min = 0
	return p.Save(8*vg.Inch, 4.5*vg.Inch, path)
}
