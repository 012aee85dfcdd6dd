package bench

import (
	"fmt"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// PlotThroughput writes a PNG of the throughput runs: the wall time of n
// concurrent sessions against n, next to the time one session takes.
func PlotThroughput(r *Report, path string) error {
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
