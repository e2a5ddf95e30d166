package main

import (
	"fmt"

	"fyne.io/fyne/v2"

	"neuralzip/analysis/chart"
)

// screens are the tabs in order, as screenshot names.
var screens = []string{"Open", "Tensors", "Histograms", "Clusters", "Setups", "Run", "Trajectory", "Generate", "Hub", rdTab}

// checkScreen says why a capture of the current screen would not show
// what the app draws: a window larger than its default size (content
// whose minimum size made it grow: the capture is cut at the screen's
// edge), or (with charts) a chart of the screen that lies partly outside
// the window, shows no plot, or has a legend over its data
// (chart.LegendClear at the chart's size).
func checkScreen(wb *workbench, name string, charts bool) error {
	c := wb.win.Canvas()
	if sz := c.Size(); sz.Width > defaultWidth || sz.Height > defaultHeight {
		return fmt.Errorf("the window is %v, larger than %vx%v: content asks for %v", sz, defaultWidth, defaultHeight, wb.win.Content().MinSize())
	}
	if !charts {
		return nil
	}
	d := fyne.CurrentApp().Driver()
	for _, cv := range wb.screenCharts(name) {
		if cv.plot == nil || !cv.raster.Visible() {
			return fmt.Errorf("%s: chart %s is empty (%q)", name, cv.name, cv.msg.Text)
		}
		pos, sz := d.AbsolutePositionForObject(cv.raster), cv.raster.Size()
		if sz.Width < 100 || sz.Height < 80 || pos.X < 0 || pos.Y < 0 || pos.X+sz.Width > c.Size().Width || pos.Y+sz.Height > c.Size().Height {
			return fmt.Errorf("%s: chart %s at %v, %v is clipped by the window %v", name, cv.name, pos, sz, c.Size())
		}
		// drawn at the raster's pixel size, as chartView.draw does
		if err := chart.LegendClear(cv.plot, int(sz.Width*c.Scale()), int(sz.Height*c.Scale()), cv.dpi()); err != nil {
			return fmt.Errorf("%s: chart %s: %w", name, cv.name, err)
		}
	}
	return nil
}

// screenCharts returns the charts of the screen called name.
func (wb *workbench) screenCharts(name string) []*chartView {
	switch name {
	case "Histograms":
		return []*chartView{wb.hist.hist, wb.hist.bits}
	case "Clusters":
		return []*chartView{wb.clusters.scatter, wb.clusters.hists, wb.clusters.elbow}
	case "Setups":
		return []*chartView{wb.setupsScr.trade}
	case "Run":
		return []*chartView{wb.run.chart}
	case "Trajectory":
		return []*chartView{wb.traj.ratio, wb.traj.changed}
	case rdTab:
		return []*chartView{wb.rd.chart}
	}
	return nil
}
