package chart

import (
	"image/color"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Point is one measurement on a trade-off chart: a speed (X) and a ratio
// (Y), more being better on both.
type Point struct {
	X, Y      float64
	Label     string // written beside the point
	Series    int    // index into Tradeoff.Series: the point's colour and marker
	Highlight bool   // ringed, its label placed first (the run just made)
}

// Tradeoff describes ratio against speed: a colour and marker per series,
// every point labelled in its series' colour. The X axis is logarithmic
// when the speeds span more than a factor of 4 (" (log scale)" is added to
// its label).
type Tradeoff struct {
	Title, XLabel, YLabel string
	Series                []string // legend names; "" leaves a series out of the legend
	Points                []Point
	Front                 bool   // draw the Pareto front of all the points as a step line
	Highlight             string // legend name of the ring of highlighted points
}

// ParetoFront returns the indices of the points no other point dominates
// (at least as large on both X and Y, larger on one), ordered by X
// ascending (Y then descends), ties by index. Equal points are all on the
// front; points with a NaN coordinate are never on it.
func ParetoFront(pts []Point) []int {
	var front []int
	for i, p := range pts {
		if math.IsNaN(p.X) || math.IsNaN(p.Y) {
			continue
		}
		dominated := false
		for j, q := range pts {
			if j != i && q.X >= p.X && q.Y >= p.Y && (q.X > p.X || q.Y > p.Y) {
				dominated = true
				break
			}
		}
		if !dominated {
			front = append(front, i)
		}
	}
	slices.SortStableFunc(front, func(a, b int) int {
		if pts[a].X != pts[b].X {
			if pts[a].X < pts[b].X {
				return -1
			}
			return 1
		}
		return a - b
	})
	return front
}

// frontSteps is the step line through a front (ParetoFront's order): from
// each point down to the next one's ratio, then across to it, the edge of
// what the front's points reach.
func frontSteps(pts []Point, front []int) plotter.XYs {
	var xy plotter.XYs
	for k, i := range front {
		if k > 0 {
			xy = append(xy, plotter.XY{X: pts[front[k-1]].X, Y: pts[i].Y})
		}
		xy = append(xy, plotter.XY{X: pts[i].X, Y: pts[i].Y})
	}
	return xy
}

// frontStyle is the Pareto front's line: dashed, in the text colour (the
// palette's colours are the points').
func frontStyle(st Style) draw.LineStyle {
	return draw.LineStyle{Color: st.Foreground, Width: vg.Points(1), Dashes: []vg.Length{vg.Points(4), vg.Points(3)}}
}

// plottable: both coordinates positive and finite.
func plottable(p Point) bool {
	return p.X > 0 && p.Y > 0 && !math.IsInf(p.X, 0) && !math.IsInf(p.Y, 0)
}

// glyphs are the series' markers, cycled.
var glyphs = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.PyramidGlyph{}, draw.BoxGlyph{}, draw.CrossGlyph{}}

// TradeoffPlot plots t: the points, their labels (each placed where it
// stays inside the data area and clear of the other points and labels),
// the fronts, and a legend above the data area.
func TradeoffPlot(t Tradeoff, st Style) (*plot.Plot, error) {
	var pts []Point
	for _, p := range t.Points {
		if plottable(p) {
			pts = append(pts, p)
		}
	}
	if len(pts) == 0 {
		return nil, ErrEmpty
	}
	xlo, xhi, ylo, yhi := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	series := len(t.Series)
	for _, p := range pts {
		xlo, xhi, ylo, yhi = min(xlo, p.X), max(xhi, p.X), min(ylo, p.Y), max(yhi, p.Y)
		series = max(series, p.Series+1)
	}
	p := newPlot(st, t.Title, t.XLabel, t.YLabel)
	// the ranges leave room around the points for their labels
	if xhi > 4*xlo {
		// log10 of the speeds on a linear axis, ticks labelled with the
		// speeds (gonum's log scale put the axis label's glyph box at the
		// linear middle and squeezed the data area)
		pts = slices.Clone(pts)
		for i := range pts {
			pts[i].X = math.Log10(pts[i].X)
		}
		lo, hi := math.Log10(xlo), math.Log10(xhi)
		p.X.Tick.Marker = log10Ticks{}
		p.X.Min, p.X.Max = lo-0.1*(hi-lo), hi+0.1*(hi-lo)
		p.X.Label.Text += " (log scale)"
	} else {
		pad := max((xhi-xlo)*0.15, xhi*0.05)
		p.X.Min, p.X.Max = max(xlo-pad, 0), xhi+pad
		p.X.Tick.Marker = niceTicks{n: 4}
	}
	pad := max((yhi-ylo)*0.15, yhi*0.002)
	p.Y.Min, p.Y.Max = ylo-pad, yhi+pad
	p.Y.Tick.Marker = niceTicks{n: 6}
	var fronts []plotter.XYs
	if xy := frontSteps(pts, ParetoFront(pts)); t.Front && len(xy) > 0 {
		ln, err := plotter.NewLine(xy)
		if err != nil {
			return nil, err
		}
		ln.LineStyle = frontStyle(st)
		p.Add(ln)
		p.Legend.Add("Pareto front", ln)
		fronts = append(fronts, xy)
	}
	for s := range series {
		var xy plotter.XYs
		for _, q := range pts {
			if q.Series == s {
				xy = append(xy, plotter.XY{X: q.X, Y: q.Y})
			}
		}
		if len(xy) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(xy)
		if err != nil {
			return nil, err
		}
		sc.Color = st.Color(s)
		sc.Shape = glyphs[s%len(glyphs)]
		sc.Radius = vg.Points(3.5)
		p.Add(sc)
		if s < len(t.Series) && t.Series[s] != "" {
			p.Legend.Add(t.Series[s], sc)
		}
	}
	var ringed plotter.XYs
	for _, q := range pts {
		if q.Highlight {
			ringed = append(ringed, plotter.XY{X: q.X, Y: q.Y})
		}
	}
	if len(ringed) > 0 {
		sc, err := plotter.NewScatter(ringed)
		if err != nil {
			return nil, err
		}
		sc.Color = st.Foreground
		sc.Shape = ring{}
		sc.Radius = vg.Points(7)
		p.Add(sc)
		if t.Highlight != "" {
			thumb := *sc // smaller: the legend's entries are a line of text apart
			thumb.Radius = vg.Points(4.5)
			p.Legend.Add(t.Highlight, &thumb)
		}
	}
	ts := p.Legend.TextStyle
	ts.Font.Size = st.FontSize * 0.9
	labels := &pointLabels{pts: pts, lines: fronts, style: ts}
	if series > 1 {
		for s := range series {
			labels.colors = append(labels.colors, st.Color(s))
		}
	}
	p.Add(labels)
	legendAbove(p)
	return p, nil
}

// TradeoffPanels plots one panel per trade-off (each titled with its
// Title), cols a row (0: all in one row), under title. Axis labels are
// kept on the left column and the bottom row; the legend (the fronts)
// stands once above the panels.
func TradeoffPanels(title string, panels []Tradeoff, cols int, st Style) (*Panels, error) {
	var shown []Tradeoff
	for _, t := range panels {
		if slices.ContainsFunc(t.Points, plottable) {
			shown = append(shown, t)
		}
	}
	if len(shown) == 0 {
		return nil, ErrEmpty
	}
	f := newPanels(st, title)
	f.Cols = cols
	f.Plots = make([]*plot.Plot, 0, len(shown))
	_, cols = (&Panels{Plots: make([]*plot.Plot, len(shown)), Cols: cols}).grid()
	for i, t := range shown {
		if i%cols != 0 {
			t.YLabel = ""
		}
		if i+cols < len(shown) { // a panel below says it
			t.XLabel = ""
		}
		t.Series, t.Highlight = nil, ""
		p, err := TradeoffPlot(t, st)
		if err != nil {
			return nil, err
		}
		if t.Front && f.Legend.Rectangle(draw.Canvas{}).Size().Y == 0 {
			f.Legend.Add("Pareto front", &plotter.Line{LineStyle: frontStyle(st)})
		}
		p.Legend = plot.NewLegend() // the figure's legend says it once
		p.Title.Padding = st.FontSize / 2
		f.Plots = append(f.Plots, p)
	}
	return f, nil
}

// pointLabels writes each point's label beside it, where placeLabels
// puts it in the data area, in its series' colour; a label wider than
// 60 % of the data area is shortened.
type pointLabels struct {
	pts    []Point
	lines  []plotter.XYs // lines the labels keep off (the fronts)
	colors []color.Color // of each series' labels; none: the style's
	style  text.Style
}

func (l *pointLabels) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	ts := l.style
	ts.XAlign, ts.YAlign = draw.XLeft, draw.YBottom
	var avoid []vg.Rectangle
	w := vg.Points(1.5)
	for _, xy := range l.lines {
		for i := 1; i < len(xy); i++ {
			a, b := vg.Point{X: trX(xy[i-1].X), Y: trY(xy[i-1].Y)}, vg.Point{X: trX(xy[i].X), Y: trY(xy[i].Y)}
			avoid = append(avoid, vg.Rectangle{Min: vg.Point{X: min(a.X, b.X) - w, Y: min(a.Y, b.Y) - w}, Max: vg.Point{X: max(a.X, b.X) + w, Y: max(a.Y, b.Y) + w}})
		}
	}
	marks := make([]labelMark, len(l.pts))
	boxes := make([]vg.Rectangle, len(l.pts))
	labels := make([]string, len(l.pts))
	for i, q := range l.pts {
		labels[i] = shorten(ts, q.Label, 0.6*c.Size().X)
		boxes[i] = ts.Rectangle(labels[i]) // drawn at (0, 0)
		marks[i] = labelMark{At: vg.Point{X: trX(q.X), Y: trY(q.Y)}, Highlight: q.Highlight}
		if q.Label != "" {
			marks[i].Size = boxes[i].Size()
		}
	}
	for i, r := range placeLabels(c.Rectangle, marks, avoid) {
		if q := l.pts[i]; q.Label != "" {
			ts.Color = l.style.Color
			if q.Series < len(l.colors) {
				ts.Color = l.colors[q.Series]
			}
			c.FillText(ts, r.Min.Sub(boxes[i].Min), labels[i])
		}
	}
}

// shorten cuts s to at most w wide in style ts, ending it with "…" where
// it cuts (keeping at least 4 characters).
func shorten(ts text.Style, s string, w vg.Length) string {
	if ts.Width(s) <= w {
		return s
	}
	r := []rune(s)
	for n := len(r) - 1; n > 4; n-- {
		if t := string(r[:n]) + "…"; ts.Width(t) <= w {
			return t
		}
	}
	return string(r[:min(len(r), 4)]) + "…"
}

// labelMark is a point to label on the canvas and its label's size (zero:
// no label).
type labelMark struct {
	At        vg.Point
	Size      vg.Point
	Highlight bool
}

// reach is how far around a mark its marker (or ring) reaches, with a
// margin.
func (m labelMark) reach() vg.Length {
	if m.Highlight {
		return vg.Points(8.5)
	}
	return vg.Points(4.5)
}

// candidates are the rectangles where m's label may go, in order of
// preference: right, left, above, below, the corners, then the corners a
// line further out.
func (m labelMark) candidates() []vg.Rectangle {
	w, h := m.Size.X, m.Size.Y
	x, y := m.At.X, m.At.Y
	gap := m.reach() + vg.Points(0.5)
	d := gap * 0.7
	corners := []vg.Point{ // lower left corners
		{X: x + gap, Y: y - h/2},
		{X: x - gap - w, Y: y - h/2},
		{X: x - w/2, Y: y + gap},
		{X: x - w/2, Y: y - gap - h},
		{X: x + d, Y: y + d},
		{X: x + d, Y: y - d - h},
		{X: x - d - w, Y: y + d},
		{X: x - d - w, Y: y - d - h},
		{X: x + d, Y: y + d + h},
		{X: x - d - w, Y: y + d + h},
		{X: x + d, Y: y - d - 2*h},
		{X: x - d - w, Y: y - d - 2*h},
	}
	out := make([]vg.Rectangle, len(corners))
	for i, k := range corners {
		out[i] = vg.Rectangle{Min: k, Max: vg.Point{X: k.X + w, Y: k.Y + h}}
	}
	return out
}

// placeLabels returns a rectangle for each mark's label beside its point,
// among the mark's candidates the one where the label covers least: of
// what lies outside area, of the points and the other labels with a
// margin (each 4 times), of the rectangles in avoid (the segments of lines); the first
// such on ties. Highlighted marks are placed first, then every label is
// moved where it covers strictly less, given the others, until none moves
// (a few rounds at most).
func placeLabels(area vg.Rectangle, marks []labelMark, avoid []vg.Rectangle) []vg.Rectangle {
	var points []vg.Rectangle
	for _, m := range marks {
		r := m.reach()
		points = append(points, vg.Rectangle{Min: vg.Point{X: m.At.X - r, Y: m.At.Y - r}, Max: vg.Point{X: m.At.X + r, Y: m.At.Y + r}})
	}
	out := make([]vg.Rectangle, len(marks))
	placed := make([]bool, len(marks))
	margin := vg.Point{X: vg.Points(3), Y: vg.Points(1)} // between labels
	cost := func(i int, b vg.Rectangle) vg.Length {
		c := 4 * (b.Size().X*b.Size().Y - overlap(b, area))
		for _, o := range points {
			c += 4 * overlap(b, o)
		}
		for j, o := range out {
			if j != i && placed[j] {
				c += 4 * overlap(b, vg.Rectangle{Min: o.Min.Sub(margin), Max: o.Max.Add(margin)})
			}
		}
		for _, o := range avoid {
			c += overlap(b, o)
		}
		return c
	}
	best := func(i int) (vg.Rectangle, vg.Length) {
		var r vg.Rectangle
		rc := vg.Length(math.Inf(1))
		for _, b := range marks[i].candidates() {
			if c := cost(i, b); c < rc-costTie {
				r, rc = b, c
			}
		}
		return r, rc
	}
	order := make([]int, 0, len(marks))
	for i, m := range marks {
		if m.Size.X > 0 && m.Size.Y > 0 {
			order = append(order, i)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int {
		ha, hb := marks[a].Highlight, marks[b].Highlight
		switch {
		case ha && !hb:
			return -1
		case hb && !ha:
			return 1
		}
		return 0
	})
	for _, i := range order {
		out[i], _ = best(i)
		placed[i] = true
	}
	for range 4 {
		moved := false
		for _, i := range order {
			if b, c := best(i); c < cost(i, out[i])-costTie {
				out[i], moved = b, true
			}
		}
		if !moved {
			break
		}
	}
	return out
}

// costTie is the difference of label costs (pt²) under which two
// placements tie (the earlier candidate stays): the costs' last bits
// differ between platforms (fused multiply-adds), the placement must not.
const costTie = 1e-6

// ring is draw.RingGlyph drawn with a visible line.
type ring struct{}

func (ring) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	c.SetLineStyle(draw.LineStyle{Color: sty.Color, Width: vg.Points(1.4)})
	var p vg.Path
	p.Move(vg.Point{X: pt.X + sty.Radius, Y: pt.Y})
	p.Arc(pt, sty.Radius, 0, 2*math.Pi)
	p.Close()
	c.Stroke(p)
}

// overlap is the area two rectangles share.
func overlap(a, b vg.Rectangle) vg.Length {
	w := min(a.Max.X, b.Max.X) - max(a.Min.X, b.Min.X)
	h := min(a.Max.Y, b.Max.Y) - max(a.Min.Y, b.Min.Y)
	if w <= 0 || h <= 0 {
		return 0
	}
	return w * h
}

// log10Ticks marks an axis of log10 values at 1, 2 and 5 times the powers
// of ten, or at every whole multiple of them where that gives fewer than
// three ticks, labelled with the values.
type log10Ticks struct{}

func (log10Ticks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) {
		return nil
	}
	for _, mant := range [][]float64{{1, 2, 5}, {1, 2, 3, 4, 5, 6, 7, 8, 9}} {
		var t []plot.Tick
		for e := math.Floor(lo); e <= math.Ceil(hi); e++ {
			for _, m := range mant {
				v := m * math.Pow(10, e)
				if l := math.Log10(v); l >= lo-1e-9 && l <= hi+1e-9 {
					t = append(t, plot.Tick{Value: l, Label: strconv.FormatFloat(v, 'g', -1, 64)})
				}
			}
		}
		if len(t) >= 3 || len(mant) > 3 {
			return t
		}
	}
	return nil
}

// niceTicks marks an axis at the multiples of a step of 1, 2 or 5 times
// a power of ten: the largest that gives at least 3 labelled ticks, among
// those giving at most n+1 (failing that, the smallest of those),
// labelled with as many decimals as the step has, with unlabelled ticks
// between. gonum's default labelled ticks 0.002 apart all "2.43", and
// crowded narrow panels.
type niceTicks struct{ n int }

func (nt niceTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) {
		return nil
	}
	labels := func(step float64) int {
		return int(math.Floor(hi/step+1e-9) - math.Ceil(lo/step-1e-9) + 1)
	}
	base := math.Pow(10, math.Floor(math.Log10(hi-lo)))
	step := 0.0
	for _, m := range []float64{50, 20, 10, 5, 2, 1, 0.5, 0.2, 0.1, 0.05, 0.02, 0.01} {
		k := labels(m * base)
		if k > max(nt.n, 1)+1 {
			break
		}
		step = m * base
		if k >= 3 {
			break
		}
	}
	if step == 0 {
		step = 50 * base
	}
	e := math.Floor(math.Log10(step) + 1e-9)
	mant := math.Round(step / math.Pow(10, e))
	dec := max(0, int(-e))
	minor := step / 5
	if mant == 2 {
		minor = step / 4
	}
	var t []plot.Tick
	for k := math.Ceil(lo/minor - 1e-9); k*minor <= hi+1e-9*step; k++ {
		v := k * minor
		if r := math.Round(v / step); math.Abs(v/step-r) < 1e-6 {
			v = r * step
			if v == 0 {
				v = 0 // not -0
			}
			t = append(t, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', dec, 64)})
			continue
		}
		t = append(t, plot.Tick{Value: v})
	}
	return t
}
