package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/redlockplus/redlock/internal/benchkit"
)

// drawCharts writes the PNG charts of a run into dir and returns their
// paths: one latency-by-percentile chart per latency workload, the
// throughput of every cycle workload, the allocations of W5 and the costs
// of W6.
func drawCharts(r *report, dir string) ([]string, error) {
	var paths []string
	save := func(name string, img *vgimg.Canvas) error {
		path := filepath.Join(dir, name)
		f, err := os.Create(path)
		if err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		_, err = vgimg.PngCanvas{Canvas: img}.WriteTo(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("bench: write %s: %w", path, err)
		}
		paths = append(paths, path)
		return nil
	}
	for _, w := range r.Workloads {
		if w.Kind == "keep" {
			continue
		}
		p, err := latencyPlot(w)
		if err != nil {
			return paths, err
		}
		if err := save("latency-"+strings.ToLower(w.ID)+".png", render(p, 16, 10)); err != nil {
			return paths, err
		}
	}
	var tput []*plot.Plot
	for _, w := range r.Workloads {
		if w.Kind != "cycle" {
			continue
		}
		p, err := barPlot(w.ID+" ops/s", "cycles/s", w.Results, func(res benchkit.Result) float64 { return res.OpsPerSec })
		if err != nil {
			return paths, err
		}
		tput = append(tput, p)
	}
	if len(tput) > 0 {
		if err := save("throughput.png", tiles(tput, 2)); err != nil {
			return paths, err
		}
	}
	for _, w := range r.Workloads {
		var ps []*plot.Plot
		switch w.Kind {
		case "allocs":
			a, err := barPlot(w.ID+" allocations per cycle", "allocs/op", w.Results, func(res benchkit.Result) float64 { return res.AllocsPerOp })
			if err != nil {
				return paths, err
			}
			b, err := barPlot(w.ID+" bytes per cycle", "B/op", w.Results, func(res benchkit.Result) float64 { return res.BytesPerOp })
			if err != nil {
				return paths, err
			}
			ps = []*plot.Plot{a, b}
		case "keep":
			keep := func(f func(*benchkit.KeepResult) float64) func(benchkit.Result) float64 {
				return func(res benchkit.Result) float64 {
					if res.Keep == nil {
						return 0
					}
					return f(res.Keep)
				}
			}
			a, err := barPlot(w.ID+" client CPU seconds", "CPU s", w.Results, keep(func(k *benchkit.KeepResult) float64 { return k.CPUSeconds }))
			if err != nil {
				return paths, err
			}
			b, err := barPlot(w.ID+" Redis commands/s (in scripts too)", "commands/s", w.Results, keep(func(k *benchkit.KeepResult) float64 { return k.CommandsPerSec }))
			if err != nil {
				return paths, err
			}
			c, err := barPlot(w.ID+" script calls/s (requests)", "EVAL+EVALSHA/s", w.Results, keep(func(k *benchkit.KeepResult) float64 { return k.ScriptsPerSec }))
			if err != nil {
				return paths, err
			}
			ps = []*plot.Plot{a, b, c}
		default:
			continue
		}
		if err := save(strings.ToLower(w.ID)+"-"+w.Kind+".png", tiles(ps, len(ps))); err != nil {
			return paths, err
		}
	}
	return paths, nil
}

// latencyPlot draws latency against percentile, HdrHistogram style: the x
// axis is in "nines" (0, 90, 99, 99.9 %) so the tail is visible, the y axis
// is logarithmic. W3 and W4 show the acquire wait (their goals); the others
// the whole cycle.
func latencyPlot(w workloadReport) (*plot.Plot, error) {
	p := plot.New()
	metric := "cycle (lock+unlock)"
	pick := func(res benchkit.Result) *benchkit.Recorder { return res.CycleSamples }
	if w.Goal == "W3" || w.Goal == "W4" {
		metric = "acquire wait"
		pick = func(res benchkit.Result) *benchkit.Recorder { return res.AcquireSamples }
	}
	p.Title.Text = fmt.Sprintf("%s: %s, %s latency", w.ID, w.Title, metric)
	p.X.Label.Text = "percentile"
	p.Y.Label.Text = "latency (ms, log scale)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.X.Tick.Marker = plot.ConstantTicks{{Value: 0, Label: "0"}, {Value: 1, Label: "90"}, {Value: 2, Label: "99"},
		{Value: 3, Label: "99.9"}, {Value: 4, Label: "99.99"}}
	p.Legend.Top = true // the curves rise to the right: the top left is free
	p.Legend.Left = true
	maxNines, lo, hi := 0.0, math.Inf(1), 0.0
	for i, res := range w.Results {
		rec := pick(res)
		if rec.Len() == 0 {
			continue
		}
		nines := math.Min(4, math.Log10(float64(rec.Len())))
		maxNines = math.Max(maxNines, nines)
		var pts plotter.XYs
		for x := 0.0; x <= nines+1e-9; x += 0.02 {
			q := 1 - math.Pow(10, -x)
			ms := float64(rec.Quantile(q)) / 1e6
			pts = append(pts, plotter.XY{X: x, Y: math.Max(ms, 1e-3)})
			lo, hi = math.Min(lo, pts[len(pts)-1].Y), math.Max(hi, pts[len(pts)-1].Y)
		}
		line, err := plotter.NewLine(pts)
		if err != nil {
			return nil, fmt.Errorf("bench: chart %s: %w", w.ID, err)
		}
		line.Color = plotutil.Color(i)
		line.Dashes = plotutil.Dashes(i)
		line.Width = vg.Points(1.5)
		p.Add(line)
		p.Legend.Add(res.Target, line)
	}
	p.Add(plotter.NewGrid())
	p.X.Min, p.X.Max = 0, math.Max(maxNines, 1)
	if hi > 0 {
		// Room above the curves for the legend: about a third of the height.
		span := math.Max(math.Log10(hi/lo), 1)
		p.Y.Min, p.Y.Max = lo, hi*math.Pow(10, 0.45*span)
	}
	return p, nil
}

// barPlot draws one bar per target.
func barPlot(title, ylabel string, results []benchkit.Result, value func(benchkit.Result) float64) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = ylabel
	vals := make(plotter.Values, len(results))
	names := make([]string, len(results))
	for i, res := range results {
		vals[i] = value(res)
		names[i] = res.Target
	}
	bars, err := plotter.NewBarChart(vals, vg.Points(28))
	if err != nil {
		return nil, fmt.Errorf("bench: chart %s: %w", title, err)
	}
	bars.Color = plotutil.Color(0)
	bars.LineStyle.Width = 0
	p.Add(bars)
	p.NominalX(names...)
	p.X.Tick.Label.Font.Size = vg.Points(8)
	return p, nil
}

// render draws one plot on a canvas of w x h centimetres.
func render(p *plot.Plot, w, h float64) *vgimg.Canvas {
	img := vgimg.NewWith(vgimg.UseWH(vg.Length(w)*vg.Centimeter, vg.Length(h)*vg.Centimeter), vgimg.UseDPI(110))
	p.Draw(draw.New(img))
	return img
}

// tiles lays plots out in a grid of cols columns.
func tiles(ps []*plot.Plot, cols int) *vgimg.Canvas {
	rows := (len(ps) + cols - 1) / cols
	grid := make([][]*plot.Plot, rows)
	for i := range grid {
		grid[i] = make([]*plot.Plot, cols)
	}
	for i, p := range ps {
		grid[i/cols][i%cols] = p
	}
	img := vgimg.NewWith(vgimg.UseWH(vg.Length(11*cols)*vg.Centimeter, vg.Length(8*rows)*vg.Centimeter), vgimg.UseDPI(110))
	t := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Centimeter, PadY: vg.Centimeter,
		PadTop: vg.Millimeter * 3, PadBottom: vg.Millimeter * 3, PadLeft: vg.Millimeter * 3, PadRight: vg.Millimeter * 3}
	canvases := plot.Align(grid, t, draw.New(img))
	for i, row := range grid {
		for j, p := range row {
			if p != nil {
				p.Draw(canvases[i][j])
			}
		}
	}
	return img
}
