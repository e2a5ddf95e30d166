package chart

import (
	"errors"
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// ErrEmpty is returned by builders given nothing to draw.
var ErrEmpty = errors.New("chart: nothing to plot")

// Histogram describes an exponent histogram plot.
type Histogram struct {
	Title string
	Hist  []uint64 // counts per exponent field value
	Bias  int      // the type's exponent bias: bin e is shown at e-Bias (log2 of the binade)
	// Model, when set, is the predicted probability of each bin (the
	// Gaussian model), drawn as a line over the bars.
	Model      []float64
	ModelLabel string
	Log        bool     // logarithmic y axis
	Notes      []string // written on the plot, top right (entropy, Huffman cost, ...)
}

// ExpHistogram plots h: the fraction of values in each binade, bars for the
// data and a line for the model. Only the range of bins that hold values
// (or model probability above 1e-7) is shown.
func ExpHistogram(h Histogram, st Style) (*plot.Plot, error) {
	var n uint64
	for _, c := range h.Hist {
		n += c
	}
	if n == 0 {
		return nil, ErrEmpty
	}
	lo, hi := len(h.Hist), -1
	for i := 1; i < len(h.Hist); i++ {
		if h.Hist[i] > 0 || (i < len(h.Model) && h.Model[i] > 1e-7) {
			lo, hi = min(lo, i), max(hi, i)
		}
	}
	notes := h.Notes
	if h.Hist[0] > 0 || hi < 0 {
		if hi < 0 || lo <= 8 {
			lo, hi = 0, max(hi, 0)
		} else {
			// zeros and subnormals far below the rest: a note, not a bar
			// at the far end of a mostly empty axis
			notes = append(append([]string(nil), notes...), fmt.Sprintf("exponent field 0 (zero/subnormal): %.2f%%", 100*float64(h.Hist[0])/float64(n)))
		}
	}
	ylabel := "fraction"
	if h.Log {
		ylabel += " (log scale)"
	}
	p := newPlot(st, h.Title, "exponent − bias  (binade: 2^e ≤ |x| < 2^(e+1))", ylabel)
	var bins []bar
	minFrac, maxFrac := 1.0, 0.0
	for i := lo; i <= hi; i++ {
		f := float64(h.Hist[i]) / float64(n)
		if f > 0 {
			minFrac = min(minFrac, f)
		}
		maxFrac = max(maxFrac, f)
		if i < len(h.Model) {
			maxFrac = max(maxFrac, h.Model[i])
		}
		x := float64(i - h.Bias)
		bins = append(bins, bar{x - 0.45, x + 0.45, f})
	}
	hp := &barPlot{bars: bins, color: st.Accent}
	p.Add(hp)
	p.Legend.Add("data", hp)
	if len(h.Model) > 0 {
		var pts plotter.XYs
		for i := lo; i <= hi && i < len(h.Model); i++ {
			y := h.Model[i]
			if h.Log && y < minFrac/10 {
				continue
			}
			pts = append(pts, plotter.XY{X: float64(i - h.Bias), Y: y})
		}
		if len(pts) > 0 {
			l, s, err := plotter.NewLinePoints(pts)
			if err != nil {
				return nil, err
			}
			l.Color = st.Model
			l.Width = vg.Points(1.5)
			s.Color = st.Model
			s.Shape = draw.CircleGlyph{}
			s.Radius = vg.Points(2)
			p.Add(l, s)
			label := h.ModelLabel
			if label == "" {
				label = "model"
			}
			p.Legend.Add(label, l, s)
		}
	}
	if h.Log {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = logTicks{}
		p.Y.Min = math.Max(minFrac/3, 1e-12)
		p.Y.Max = 4 // room for the legend above the highest bar
	} else {
		p.Y.Min = 0
		p.Y.Max = 1.3 * maxFrac
	}
	p.X.Tick.Marker = intTicks{}
	p.X.Min, p.X.Max = float64(lo-h.Bias)-0.7, float64(hi-h.Bias)+0.7
	if len(notes) > 0 {
		p.Add(noteBox{lines: notes, style: st, left: true})
	}
	return p, nil
}

// intTicks puts ticks on whole numbers, about ten of them.
type intTicks struct{}

func (intTicks) Ticks(lo, hi float64) []plot.Tick {
	span := hi - lo
	step := 1.0
	for span/step > 12 {
		switch {
		case step < 2:
			step = 2
		case step < 5:
			step = 5
		default:
			step *= 2
		}
	}
	var t []plot.Tick
	for x := math.Ceil(lo/step) * step; x <= hi; x += step {
		if x == 0 {
			x = 0 // not -0, which would print as "-0"
		}
		t = append(t, plot.Tick{Value: x, Label: fmt.Sprintf("%.0f", x)})
	}
	return t
}

// BitPlanes describes the sign and mantissa bit-plane plot: for each bit,
// the fraction of values that have it set and its binary entropy.
type BitPlanes struct {
	Title   string
	Labels  []string  // per bit, most significant first ("sign", "m6", ...)
	Ones    []float64 // fraction of values with the bit set
	Entropy []float64 // binary entropy of each bit, 0..1
	Notes   []string
}

// BitPlaneBars plots b as bars (fraction of ones) with the entropy as a
// line of points.
func BitPlaneBars(b BitPlanes, st Style) (*plot.Plot, error) {
	if len(b.Ones) == 0 || len(b.Ones) != len(b.Labels) {
		return nil, ErrEmpty
	}
	p := newPlot(st, b.Title, "", "fraction / bits")
	bc, err := plotter.NewBarChart(plotter.Values(b.Ones), vg.Points(12))
	if err != nil {
		return nil, err
	}
	bc.Color = st.Accent
	bc.LineStyle.Width = 0
	p.Add(bars{bc})
	p.Legend.Add("P(bit = 1)", bc)
	if len(b.Entropy) == len(b.Ones) {
		var pts plotter.XYs
		for i, e := range b.Entropy {
			pts = append(pts, plotter.XY{X: float64(i), Y: e})
		}
		l, s, err := plotter.NewLinePoints(pts)
		if err != nil {
			return nil, err
		}
		l.Color, s.Color = st.Model, st.Model
		s.Shape = draw.CircleGlyph{}
		p.Add(l, s)
		p.Legend.Add("entropy (bits)", l, s)
	}
	p.NominalX(b.Labels...)
	p.Legend.Left = true
	p.Y.Min, p.Y.Max = 0, 1.3
	if len(b.Notes) > 0 {
		p.Add(noteBox{lines: b.Notes, style: st})
	}
	return p, nil
}

// bar is one bar from the axis minimum to y, between x0 and x1.
type bar struct{ x0, x1, y float64 }

// barPlot draws bars from the y axis minimum (so that it works with a
// logarithmic scale; bars of height 0 are left out).
type barPlot struct {
	bars  []bar
	color color.Color
}

func (b *barPlot) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax, ymin, ymax = math.Inf(1), math.Inf(-1), 0, 0
	for _, r := range b.bars {
		xmin, xmax, ymax = min(xmin, r.x0), max(xmax, r.x1), max(ymax, r.y)
	}
	return
}

func (b *barPlot) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for _, r := range b.bars {
		if r.y <= 0 || r.y < p.Y.Min {
			continue
		}
		y0 := c.Min.Y
		pts := []vg.Point{{X: trX(r.x0), Y: y0}, {X: trX(r.x1), Y: y0}, {X: trX(r.x1), Y: trY(r.y)}, {X: trX(r.x0), Y: trY(r.y)}}
		c.FillPolygon(b.color, c.ClipPolygonXY(pts))
	}
}

// GlyphBoxes marks each bar's top and barMarks points down its height,
// with no size, so that LegendClear sees the bars without their padding
// the plot.
func (b *barPlot) GlyphBoxes(p *plot.Plot) []plot.GlyphBox {
	var boxes []plot.GlyphBox
	for _, r := range b.bars {
		if r.y <= 0 {
			continue
		}
		x := p.X.Norm((r.x0 + r.x1) / 2)
		for k := 1; k <= barMarks; k++ {
			if y := r.y * float64(k) / barMarks; y >= p.Y.Min {
				boxes = append(boxes, plot.GlyphBox{X: x, Y: p.Y.Norm(y)})
			}
		}
	}
	return boxes
}

// Thumbnail draws the legend entry.
func (b *barPlot) Thumbnail(c *draw.Canvas) {
	pts := []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Min.X, Y: c.Max.Y}}
	c.FillPolygon(b.color, pts)
}
