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
// paths: one latency-by-percentile chart per latency workload (W9: the
// loss detection), the throughput of every cycle workload, the allocations
// of W5, the costs of W6 and W7, and the round-2 goals against their
// limits, captioned with the machine.
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
			d, err := barPlot(w.ID+" client heap per held lock", "bytes", w.Results, keep(func(k *benchkit.KeepResult) float64 { return k.HeapBytesPerLock }))
			if err != nil {
				return paths, err
			}
			ps = []*plot.Plot{a, b, c, d}
		default:
			continue
		}
		if err := save(strings.ToLower(w.ID)+"-"+w.Kind+".png", tiles(ps, len(ps))); err != nil {
			return paths, err
		}
	}
	if p, ok, err := curvePlot(r); err != nil {
		return paths, err
	} else if ok {
		if err := save("w7-curve.png", render(p, 14, 10)); err != nil {
			return paths, err
		}
	}
	if p, ok, err := goalsPlot(r); err != nil {
		return paths, err
	} else if ok {
		if err := save("goals-round2.png", render(p, 18, 11)); err != nil {
			return paths, err
		}
	}
	return paths, nil
}

// goalsPlot draws the goals of issue 15 (round2Goals) as how far each
// measure is from its limit, 1 being the limit and higher better: limit /
// value for an upper bound, value / limit for a lower one, and for "0
// lost" 1 or 0; capped at 3. The title names the machine. ok is false
// without such goals.
func goalsPlot(r *report) (p *plot.Plot, ok bool, err error) {
	var vals plotter.Values
	var names []string
	for _, c := range r.round2Goals() {
		var v float64
		switch {
		case c.Cmp == "==":
			if c.Pass {
				v = 1
			}
		case c.Cmp == "<=" && c.Value > 0:
			v = c.Limit / c.Value
		case c.Cmp == "<=":
			v = 3 // nothing measured against a positive limit
		case c.Limit > 0:
			v = c.Value / c.Limit
		}
		vals = append(vals, math.Min(v, 3))
		names = append(names, c.Goal+" "+goalLabel(c.Metric))
	}
	if len(vals) == 0 {
		return nil, false, nil
	}
	p = plot.New()
	m := r.Machine
	p.Title.Text = fmt.Sprintf("Goals against rueidislock: margin (1 = the limit, higher is better, capped at 3)\n%d CPUs, %s, %s; Redis %s; %s; load at the end %s",
		m.CPUs, m.CPUModel, m.OS, redisShort(m.Redis), m.Go, loadShort(m.LoadAvg))
	p.Y.Label.Text = "margin to the goal"
	bars, err := plotter.NewBarChart(vals, vg.Points(22))
	if err != nil {
		return nil, false, fmt.Errorf("bench: goals chart: %w", err)
	}
	bars.Color = plotutil.Color(0)
	bars.LineStyle.Width = 0
	p.Add(bars)
	limit := plotter.NewFunction(func(float64) float64 { return 1 })
	limit.Color = plotutil.Color(1)
	limit.Dashes = plotutil.Dashes(1)
	p.Add(limit)
	p.NominalX(names...)
	p.X.Tick.Label.Font.Size = vg.Points(7)
	p.X.Tick.Label.Rotation = math.Pi / 6
	p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XRight, draw.YCenter
	p.Y.Min = 0
	return p, true, nil
}

// goalLabel is a goal's metric without the targets: "cycle p50" of "cycle
// p50 redlock/rueidislock".
func goalLabel(metric string) string {
	var words []string
	for _, f := range strings.Fields(metric) {
		if strings.Contains(f, "redlock") {
			break
		}
		words = append(words, f)
	}
	return strings.Join(words, " ")
}

// redisShort is the version of `redis-server --version` ("v=7.0.15").
func redisShort(version string) string {
	for _, f := range strings.Fields(version) {
		if v, ok := strings.CutPrefix(f, "v="); ok {
			return v
		}
	}
	return version
}

// loadShort keeps the three load averages of /proc/loadavg.
func loadShort(loadavg string) string {
	f := strings.Fields(loadavg)
	return strings.Join(f[:min(3, len(f))], " ")
}

// latencyPlot draws latency against percentile, HdrHistogram style: the x
// axis is in "nines" (0, 90, 99, 99.9 %) so the tail is visible, the y axis
// is logarithmic. W3 and W4 show the acquire wait (their goals); the others
// the whole cycle.
func latencyPlot(w workloadReport) (*plot.Plot, error) {
	p := plot.New()
	metric := "cycle (lock+unlock)"
	pick := func(res benchkit.Result) *benchkit.Recorder { return res.CycleSamples }
	switch {
	case w.Goal == "W3" || w.Goal == "W4":
		metric = "acquire wait"
		pick = func(res benchkit.Result) *benchkit.Recorder { return res.AcquireSamples }
	case w.Kind == "detect":
		metric = "keys broken to Done (misses at the bound)"
		pick = func(res benchkit.Result) *benchkit.Recorder { return res.DetectSamples }
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
