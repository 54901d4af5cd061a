package compare

import (
	"fmt"
	"image/color"
	"math"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Colours: one per topology, dashed for errors.
var topologyColor = map[string]color.Color{
	PreSharding: color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	Cluster:     color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
}

// writePlot draws one PNG: the latency distribution of every workload
// (both topologies on each panel) and the failover timeline of each
// topology.
func writePlot(r *Results, path string) error {
	var panels []*plot.Plot
	for _, w := range workloads {
		p := plot.New()
		p.Title.Text = "latency: " + w.name
		if w.unit == "batch" {
			p.Title.Text += " (per batch)"
		}
		p.X.Label.Text = "percentile"
		p.Y.Label.Text = "ms (log)"
		p.X.Tick.Marker = plot.ConstantTicks([]plot.Tick{{Value: 0, Label: "0"}, {Value: 1, Label: "90"},
			{Value: 2, Label: "99"}, {Value: 3, Label: "99.9"}, {Value: 4, Label: "99.99"}})
		p.X.Min, p.X.Max = 0, 4.5
		p.Legend.Top, p.Legend.Left = true, true
		lines := 0
		for _, name := range []string{PreSharding, Cluster} {
			t := r.Topologies[name]
			if t == nil {
				continue
			}
			for _, nh := range t.hists {
				if nh.name != w.name || nh.h.TotalCount() == 0 {
					continue
				}
				var xys plotter.XYs
				for _, b := range nh.h.CumulativeDistribution() {
					q := b.Quantile / 100
					if q >= 0.99995 {
						q = 0.99995
					}
					xys = append(xys, plotter.XY{X: math.Log10(1 / (1 - q)), Y: math.Max(float64(b.ValueAt)/1000, 0.001)})
				}
				l, err := plotter.NewLine(xys)
				if err != nil {
					return fmt.Errorf("compare: plot: %w", err)
				}
				l.Color = topologyColor[name]
				l.Width = vg.Points(1.5)
				p.Add(l)
				p.Legend.Add(name, l)
				lines++
			}
		}
		if lines > 0 {
			// A log scale needs data: a workload that did not run keeps
			// an empty linear panel.
			p.Y.Scale = plot.LogScale{}
			p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
		} else {
			p.Title.Text += " (not run)"
		}
		p.Add(plotter.NewGrid())
		panels = append(panels, p)
	}
	for _, name := range []string{PreSharding, Cluster} {
		t := r.Topologies[name]
		p := plot.New()
		p.Title.Text = "kill -9 of one master: " + name
		p.X.Label.Text = "seconds since the kill"
		p.Y.Label.Text = "writes/s"
		p.Legend.Top = true
		if t != nil && t.Failover != nil {
			series := []struct {
				label string
				dash  bool
				ok    bool
				mine  bool
			}{{"its keys: acked", false, true, true}, {"other keys: acked", false, true, false}, {"its keys: failed", true, false, true}}
			for i, s := range series {
				var xys plotter.XYs
				for _, b := range t.Failover.Timeline {
					v := b.OthersOK
					switch {
					case s.mine && s.ok:
						v = b.KilledOK
					case s.mine:
						v = b.KilledErr
					}
					xys = append(xys, plotter.XY{X: b.T, Y: float64(v) * float64(1e9/bucketWidth.Nanoseconds())})
				}
				if len(xys) == 0 {
					continue
				}
				l, err := plotter.NewLine(xys)
				if err != nil {
					return fmt.Errorf("compare: plot: %w", err)
				}
				l.Color = []color.Color{topologyColor[name], color.Gray{Y: 0x70}, color.RGBA{R: 0xff, G: 0x99, A: 0xff}}[i]
				l.Width = vg.Points(1.2)
				if s.dash {
					l.Dashes = []vg.Length{vg.Points(3), vg.Points(2)}
				}
				p.Add(l)
				p.Legend.Add(s.label, l)
			}
			p.Title.Text += fmt.Sprintf(" (blackout %.2fs, %d acked writes lost)", t.Failover.BlackoutS, t.Failover.LostAcked)
		}
		p.Add(plotter.NewGrid())
		panels = append(panels, p)
	}
	const cols = 2
	rows := (len(panels) + cols - 1) / cols
	grid := make([][]*plot.Plot, rows)
	for i := range grid {
		grid[i] = make([]*plot.Plot, cols)
		for j := range cols {
			if k := i*cols + j; k < len(panels) {
				grid[i][j] = panels[k]
			}
		}
	}
	img := vgimg.New(vg.Points(1100), vg.Points(330*float64(rows)))
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := plot.Align(grid, tiles, dc)
	for i := range grid {
		for j := range grid[i] {
			if grid[i][j] != nil {
				grid[i][j].Draw(canvases[i][j])
			}
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("compare: %w", err)
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("compare: plot: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("compare: %w", err)
	}
	return nil
}
