package main

import (
	"bytes"
	"image"
	"image/color"
	"io"
	"os"
	"path/filepath"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/storage"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"

	"neuralzip/analysis/chart"
)

// chartView shows a gonum plot (or a chart.Figure of several), redrawn at
// the widget's pixel size, with buttons to export it as PNG or SVG. The
// figure is rebuilt from build whenever SetBuilder or SetFigure is called
// or the theme changes.
type chartView struct {
	wb      *workbench
	name    string // default export file name, without extension
	build   func(st chart.Style) (chart.Figure, error)
	plot    chart.Figure // nil: none
	err     error
	raster  *canvas.Raster
	msg     *widget.Label
	content *fyne.Container
}

func newChartView(wb *workbench, name, empty string) *chartView {
	cv := &chartView{wb: wb, name: name}
	wb.charts = append(wb.charts, cv)
	cv.raster = canvas.NewRaster(cv.draw)
	cv.raster.ScaleMode = hostRasterScale
	cv.raster.SetMinSize(fyne.NewSize(260, 150))
	cv.msg = widget.NewLabel(empty)
	cv.msg.Alignment = fyne.TextAlignCenter
	png := widget.NewButtonWithIcon("PNG", theme.DownloadIcon(), func() { cv.exportDialog("png") })
	svg := widget.NewButtonWithIcon("SVG", theme.DownloadIcon(), func() { cv.exportDialog("svg") })
	png.Importance, svg.Importance = widget.LowImportance, widget.LowImportance
	bar := container.NewHBox(layoutSpacer(), png, svg)
	// the message wraps in the chart's width (a long one on one line made
	// the window wider than the screen)
	cv.msg.Wrapping = fyne.TextWrapWord
	cv.content = container.NewBorder(nil, bar, nil, nil, container.NewStack(cv.raster, wrapBox(cv.msg, 4)))
	cv.raster.Hide()
	return cv
}

// chartStyle is the chart style of the current theme: dark or light by the
// theme's background, with that background.
func (wb *workbench) chartStyle() chart.Style {
	th := wb.app.Settings().Theme()
	bg := th.Color(theme.ColorNameBackground, wb.app.Settings().ThemeVariant())
	r, g, b, _ := bg.RGBA()
	st := chart.Light()
	if 0.2126*float64(r)+0.7152*float64(g)+0.0722*float64(b) < 0.5*0xffff {
		st = chart.Dark()
	}
	st.Background = bg
	return st
}

// SetBuilder sets the plot (nil: none, with the empty message msg).
func (cv *chartView) SetBuilder(build func(st chart.Style) (*plot.Plot, error), msg string) {
	if build == nil {
		cv.SetFigure(nil, msg)
		return
	}
	cv.SetFigure(func(st chart.Style) (chart.Figure, error) {
		p, err := build(st)
		if p == nil || err != nil {
			return nil, err // not a Figure holding a nil *plot.Plot
		}
		return p, nil
	}, msg)
}

// SetFigure sets the figure (nil: none, with the empty message msg).
func (cv *chartView) SetFigure(build func(st chart.Style) (chart.Figure, error), msg string) {
	cv.build = build
	cv.rebuild()
	if cv.plot == nil {
		if cv.err != nil && msg == "" {
			msg = cv.err.Error()
		}
		cv.msg.SetText(msg)
		cv.msg.Show()
		cv.raster.Hide()
		return
	}
	cv.msg.Hide()
	cv.raster.Show()
	cv.raster.Refresh()
}

func (cv *chartView) rebuild() {
	cv.plot, cv.err = nil, nil
	if cv.build == nil {
		return
	}
	cv.plot, cv.err = cv.build(cv.wb.chartStyle())
	if cv.err != nil {
		cv.plot = nil
	}
}

// Restyle rebuilds the plot for the current theme.
func (cv *chartView) Restyle() {
	if cv.build != nil {
		cv.SetFigure(cv.build, cv.msg.Text)
	}
}

func (cv *chartView) draw(w, h int) image.Image {
	p := cv.plot
	if p == nil || w < 8 || h < 8 {
		return image.NewUniform(color.Transparent)
	}
	return chart.Render(p, w, h, cv.dpi())
}

// dpi is the resolution the chart is drawn at: 96 at the canvas's scale.
func (cv *chartView) dpi() int {
	scale := float32(1)
	if c := fyne.CurrentApp().Driver().CanvasForObject(cv.raster); c != nil {
		scale = c.Scale()
	}
	return int(96 * scale)
}

// export writes the plot to path as PNG (1600×1000 pixels) or SVG, by the
// extension.
func (cv *chartView) export(path string) error {
	if cv.plot == nil {
		return chart.ErrEmpty
	}
	var b []byte
	var err error
	if strings.EqualFold(filepath.Ext(path), ".svg") {
		b, err = chart.SVG(cv.plot, 10*vg.Inch, 6.25*vg.Inch)
	} else {
		b, err = chart.PNG(cv.plot, 1600, 1000, 160)
	}
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

func (cv *chartView) exportDialog(ext string) {
	if cv.plot == nil {
		return
	}
	if hostBrowser {
		var b []byte
		var err error
		if ext == "svg" {
			b, err = chart.SVG(cv.plot, 10*vg.Inch, 6.25*vg.Inch)
		} else {
			b, err = chart.PNG(cv.plot, 1600, 1000, 160)
		}
		if err == nil {
			err = hostDownload(cv.name+"."+ext, b)
		}
		if err != nil {
			cv.wb.showError(err)
		}
		return
	}
	d := dialog.NewFileSave(func(uc fyne.URIWriteCloser, err error) {
		if err != nil || uc == nil {
			return
		}
		p := uc.URI().Path()
		uc.Close()
		if err := cv.export(p); err != nil {
			cv.wb.showError(err)
			return
		}
		cv.wb.setStatus("Wrote %s", p)
	}, cv.wb.win)
	d.SetFileName(cv.name + "." + ext)
	d.SetFilter(storage.NewExtensionFileFilter([]string{"." + ext}))
	d.Resize(fyne.NewSize(900, 600))
	d.Show()
}

func showErr(err error, w fyne.Window) { dialog.ShowError(err, w) }

func layoutSpacer() fyne.CanvasObject { return layout.NewSpacer() }

func layoutForm() fyne.Layout { return layout.NewFormLayout() }

// heading is a bold label.
func heading(s string) *widget.Label {
	l := widget.NewLabelWithStyle(s, fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	return l
}

// saveFile lets the user save what write produces as name: a save dialog
// on the desktop, a download in the browser. Errors are shown.
func (wb *workbench) saveFile(name string, write func(w io.Writer) error) {
	if hostBrowser {
		var b bytes.Buffer
		err := write(&b)
		if err == nil {
			err = hostDownload(name, b.Bytes())
		}
		if err != nil {
			wb.showError(err)
		}
		return
	}
	d := dialog.NewFileSave(func(wc fyne.URIWriteCloser, err error) {
		if err != nil || wc == nil {
			return
		}
		defer wc.Close()
		if err := write(wc); err != nil {
			wb.showError(err)
		}
	}, wb.win)
	d.SetFileName(name)
	d.Resize(fyne.NewSize(900, 600))
	d.Show()
}

// wrapBox shows a word-wrapped label in the width it is given, at most
// lines lines tall (scrolling past them). A wrapped label alone asks for
// the height of its text at its narrowest (a word a line: thousands of
// pixels), which made the window grow past the screen.
func wrapBox(l *widget.Label, lines int) fyne.CanvasObject {
	sc := container.NewVScroll(l)
	size := l.SizeName
	if size == "" {
		size = theme.SizeNameText
	}
	h := fyne.MeasureText("Mg", theme.Size(size), l.TextStyle).Height
	sc.SetMinSize(fyne.NewSize(0, float32(lines)*h+2*theme.InnerPadding()))
	return sc
}

// formRow is a label and a control side by side.
func formRow(label string, obj fyne.CanvasObject) fyne.CanvasObject {
	return container.NewBorder(nil, nil, widget.NewLabel(label), nil, obj)
}
