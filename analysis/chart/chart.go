// Package chart builds the workbench's plots with gonum/plot: exponent
// histograms with the Gaussian model's prediction, bit-plane statistics,
// chunk clusters (projection, histograms, elbow), heatmaps, grouped bars,
// and ratio against speed with the Pareto front (one plot, or a panel per
// model). Builders take plain data (usually from package analysis) and a
// Style, and return a *plot.Plot or Panels of them (a Figure); Render, PNG
// and SVG draw it, and LegendClear checks that no legend covers data.
// Nothing here knows about a UI toolkit, so the desktop workbench, the
// browser build and tests share it.
package chart

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Style holds the colours and text size of a plot. Light and Dark match
// the workbench's themes.
type Style struct {
	Background color.Color
	Foreground color.Color // text, axes
	Grid       color.Color
	Accent     color.Color   // the main series
	Model      color.Color   // model predictions, reference lines
	Palette    []color.Color // categorical series (clusters, codecs)
	FontSize   vg.Length     // tick labels; titles are 1.2×
}

// Light is a style on a white background.
func Light() Style {
	return Style{
		Background: color.White,
		Foreground: color.RGBA{0x21, 0x21, 0x21, 0xff},
		Grid:       color.RGBA{0xe0, 0xe0, 0xe0, 0xff},
		Accent:     color.RGBA{0x29, 0x6f, 0xd1, 0xff},
		Model:      color.RGBA{0xd9, 0x48, 0x1c, 0xff},
		Palette:    palette(),
		FontSize:   vg.Points(10),
	}
}

// Dark is a style on a dark background.
func Dark() Style {
	return Style{
		Background: color.RGBA{0x17, 0x17, 0x18, 0xff},
		Foreground: color.RGBA{0xe8, 0xe8, 0xe8, 0xff},
		Grid:       color.RGBA{0x3a, 0x3a, 0x3c, 0xff},
		Accent:     color.RGBA{0x5a, 0x9c, 0xf8, 0xff},
		Model:      color.RGBA{0xff, 0x8a, 0x50, 0xff},
		Palette:    palette(),
		FontSize:   vg.Points(10),
	}
}

// palette is a categorical palette readable on light and dark backgrounds
// (Tableau 10).
func palette() []color.Color {
	hex := []uint32{0x4e79a7, 0xf28e2b, 0xe15759, 0x76b7b2, 0x59a14f, 0xedc948, 0xb07aa1, 0xff9da7, 0x9c755f, 0xbab0ac}
	out := make([]color.Color, len(hex))
	for i, h := range hex {
		out[i] = color.RGBA{uint8(h >> 16), uint8(h >> 8), uint8(h), 0xff}
	}
	return out
}

// Color returns the i-th colour of the palette, cycling.
func (s Style) Color(i int) color.Color {
	if len(s.Palette) == 0 {
		return s.Accent
	}
	return s.Palette[i%len(s.Palette)]
}

// newPlot returns an empty plot with the style applied.
func newPlot(st Style, title, xlabel, ylabel string) *plot.Plot {
	p := plot.New()
	p.BackgroundColor = st.Background
	p.Title.Text = title
	p.Title.TextStyle.Color = st.Foreground
	p.Title.TextStyle.Font.Variant = "Sans"
	p.Title.TextStyle.Font.Size = st.FontSize * 1.2
	p.Title.Padding = st.FontSize / 2
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Color = st.Foreground
		a.Label.TextStyle.Color = st.Foreground
		a.Label.TextStyle.Font.Size = st.FontSize * 1.1
		a.Tick.Label.Color = st.Foreground
		a.Tick.Label.Font.Size = st.FontSize
		a.Tick.Color = st.Foreground
		a.Label.TextStyle.Font.Variant = "Sans"
		a.Tick.Label.Font.Variant = "Sans"
	}
	p.X.Label.Text = xlabel
	p.Y.Label.Text = ylabel
	p.Legend.TextStyle.Color = st.Foreground
	p.Legend.TextStyle.Font.Size = st.FontSize
	p.Legend.TextStyle.Font.Variant = "Sans"
	p.Legend.Top = true
	g := plotter.NewGrid()
	g.Vertical.Color = st.Grid
	g.Horizontal.Color = st.Grid
	p.Add(g)
	return p
}

// Figure is what Render, PNG and SVG draw: a *plot.Plot, or Panels.
type Figure interface {
	Draw(c draw.Canvas)
}

// Render draws p into an image of w×h pixels at dpi dots per inch (96
// is the usual screen; text scales with it).
func Render(p Figure, w, h, dpi int) image.Image {
	if w < 1 {
		w = 1
	}
	if h < 1 {
		h = 1
	}
	if dpi <= 0 {
		dpi = 96
	}
	c := vgimg.NewWith(vgimg.UseWH(vg.Length(w)*vg.Inch/vg.Length(dpi), vg.Length(h)*vg.Inch/vg.Length(dpi)), vgimg.UseDPI(dpi))
	p.Draw(draw.New(c))
	return c.Image()
}

// PNG encodes p as a PNG of w×h pixels at dpi.
func PNG(p Figure, w, h, dpi int) ([]byte, error) {
	if dpi <= 0 {
		dpi = 96
	}
	c := vgimg.NewWith(vgimg.UseWH(vg.Length(w)*vg.Inch/vg.Length(dpi), vg.Length(h)*vg.Inch/vg.Length(dpi)), vgimg.UseDPI(dpi))
	p.Draw(draw.New(c))
	var b bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: c}).WriteTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// SVG encodes p as an SVG of w×h points.
func SVG(p Figure, w, h vg.Length) ([]byte, error) {
	c := vgsvg.New(w, h)
	p.Draw(draw.New(c))
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// noteBox writes lines of text in the top right corner of the data area.
type noteBox struct {
	lines []string
	style Style
	left  bool // top left instead
}

func (n noteBox) Plot(c draw.Canvas, p *plot.Plot) {
	ts := p.Legend.TextStyle
	ts.Color = n.style.Foreground
	ts.Font.Size = n.style.FontSize
	ts.XAlign = draw.XRight
	x := c.Max.X - n.style.FontSize/2
	if n.left {
		ts.XAlign = draw.XLeft
		x = c.Min.X + n.style.FontSize/2
	}
	ts.YAlign = draw.YTop
	h := ts.FontExtents().Height * 1.2
	y := c.Max.Y - n.style.FontSize/2
	// a translucent box behind the text keeps it readable over the bars
	var wmax vg.Length
	for _, l := range n.lines {
		wmax = max(wmax, ts.Width(l))
	}
	if len(n.lines) > 0 {
		pad := n.style.FontSize / 3
		r := vg.Rectangle{Min: vg.Point{X: x - wmax - pad, Y: y - h*vg.Length(len(n.lines)) - pad}, Max: vg.Point{X: x + pad, Y: y + pad}}
		if n.left {
			r = vg.Rectangle{Min: vg.Point{X: x - pad, Y: r.Min.Y}, Max: vg.Point{X: x + wmax + pad, Y: r.Max.Y}}
		}
		bg := color.RGBAModel.Convert(n.style.Background).(color.RGBA)
		bg.A = 0xb0
		bg.R, bg.G, bg.B = uint8(uint16(bg.R)*0xb0/0xff), uint8(uint16(bg.G)*0xb0/0xff), uint8(uint16(bg.B)*0xb0/0xff)
		c.FillPolygon(bg, c.ClipPolygonXY([]vg.Point{r.Min, {X: r.Max.X, Y: r.Min.Y}, r.Max, {X: r.Min.X, Y: r.Max.Y}}))
	}
	for _, l := range n.lines {
		c.FillText(ts, vg.Point{X: x, Y: y}, l)
		y -= h
	}
}

// logTicks puts major ticks on powers of ten, labelled 1, 0.1, 0.01, 1e-3, ...
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	var t []plot.Tick
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		v := math.Pow(10, e)
		if v < lo*0.999 || v > hi*1.001 {
			continue
		}
		var label string
		switch {
		case e >= 0 && e <= 4:
			label = strconv.FormatFloat(v, 'f', 0, 64)
		case e < 0 && e >= -2:
			label = strconv.FormatFloat(v, 'f', int(-e), 64)
		default:
			label = fmt.Sprintf("1e%d", int(e))
		}
		t = append(t, plot.Tick{Value: v, Label: label})
	}
	return t
}
