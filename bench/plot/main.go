// Command plot draws `make bench`'s results (bench/results.json, written by
// bench/bed.sh) as an SVG: wall time and CPU seconds against the number of
// workers N, for heatsible's first run, its re-run and the sequential
// baseline (bench/baseline.sh), with the machine's page-fault cost and load
// in the caption, since machines differ several-fold in both.
//
//	go run ./bench/plot -in bench/results.json -out bench/results.svg
//
// Standard library only, so that `make bench` needs nothing beyond Go.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"html"
	"io"
	"math"
	"os"
	"sort"
	"strings"
)

// Results is the part of results.json the plot reads.
type Results struct {
	Label           string     `json:"label"`
	Commit          string     `json:"commit"`
	Date            string     `json:"date"`
	NProc           int        `json:"nproc"`
	PageFaultRange  []float64  `json:"page_fault_us_range"`
	LoadRange       []float64  `json:"load_range"`
	Machine         Machine    `json:"machine"`
	Rows            []Row      `json:"rows"`
	NFSCommonPurged bool       `json:"nfs_common_purged_before_first_runs"`
	Targets         TargetText `json:"targets"`
}

// Machine holds bench/machine.sh's figures taken at the start of the series.
type Machine struct {
	PageFaultUS float64 `json:"page_fault_us"`
}

// TargetText is what bed.sh concluded about each target (shown as is).
type TargetText map[string]string

// targetNames are the targets of issue 19 as results.json keys them.
var targetNames = map[string]string{
	"first_64_le_0_5_baseline":     "N = 64, first run <= 0.5 x baseline",
	"cpu_8_le_1_0_baseline":        "N = 8, CPU seconds <= 1.0 x baseline",
	"rerun_le_0_3_first_0_changed": "re-run <= 0.3 x first, 0 changed",
}

// Row is one N of the series; a nil field was not measured.
type Row struct {
	Workers     int      `json:"workers"`
	FirstS      *float64 `json:"heatsible_first_s"`
	RerunS      *float64 `json:"heatsible_rerun_s"`
	BaselineS   *float64 `json:"baseline_s"`
	FloorS      *float64 `json:"floor_s"`
	CPUFirst    *float64 `json:"cpu_first_total"`
	CPURerun    *float64 `json:"cpu_rerun_total"`
	CPUBaseline *float64 `json:"cpu_baseline_total"`
	// Tacker's sample driver's storage steps (bed.sh with TACKER_SRC)
	TackerS      *float64 `json:"tacker_s"`
	CPUTacker    *float64 `json:"cpu_tacker_total"`
	RerunChanged int      `json:"rerun_changed"`
	// the 1-minute load before each measurement (and after it, in newer results)
	Loads []*float64 `json:"-"`
}

// UnmarshalJSON reads a row and gathers its load figures, whatever the
// version of bed.sh that wrote it recorded (the "after" ones are newer).
func (r *Row) UnmarshalJSON(b []byte) error {
	type plain Row
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	var raw map[string]*float64
	if err := json.Unmarshal(b, &raw); err != nil {
		raw = nil // a field that is not a number: no load figures, the rest as read
	}
	*r = Row(p)
	for _, k := range []string{"load_first", "load_rerun", "load_baseline", "load_first_after", "load_rerun_after", "load_baseline_after"} {
		if v := raw[k]; v != nil {
			r.Loads = append(r.Loads, v)
		}
	}
	return nil
}

func main() {
	in := flag.String("in", "bench/results.json", "results.json written by bench/bed.sh")
	out := flag.String("out", "bench/results.svg", "the SVG to write")
	flag.Parse()
	if err := run(*in, *out); err != nil {
		fmt.Fprintln(os.Stderr, "plot:", err)
		os.Exit(1)
	}
}

func run(in, out string) error {
	f, err := os.Open(in)
	if err != nil {
		return fmt.Errorf("reading results: %w", err)
	}
	defer f.Close()
	res, err := decode(f)
	if err != nil {
		return fmt.Errorf("reading %s: %w", in, err)
	}
	svg, err := Render(res)
	if err != nil {
		return fmt.Errorf("drawing %s: %w", in, err)
	}
	tmp := out + ".tmp"
	if err := os.WriteFile(tmp, svg, 0o644); err != nil {
		return fmt.Errorf("writing the plot: %w", err)
	}
	if err := os.Rename(tmp, out); err != nil {
		return fmt.Errorf("writing the plot: %w", err)
	}
	return nil
}

func decode(r io.Reader) (Results, error) {
	var res Results
	if err := json.NewDecoder(r).Decode(&res); err != nil {
		return res, fmt.Errorf("decoding JSON: %w", err)
	}
	if len(res.Rows) == 0 {
		return res, errors.New("no rows: nothing to plot")
	}
	sort.Slice(res.Rows, func(i, j int) bool { return res.Rows[i].Workers < res.Rows[j].Workers })
	return res, nil
}

// series is one line of a panel.
type series struct {
	name   string
	color  string
	dash   string // stroke-dasharray, "" for solid
	marker string // circle, square, triangle, none
	value  func(Row) *float64
	// optional: left out of the legend (and the title) when no row has a value
	optional bool
}

var (
	wallSeries = []series{
		{"heatsible, first run", "#1f5fbf", "", "circle", func(r Row) *float64 { return r.FirstS }, false},
		{"heatsible, re-run", "#1f5fbf", "6 4", "square", func(r Row) *float64 { return r.RerunS }, false},
		{"sequential baseline", "#d9641e", "", "triangle", func(r Row) *float64 { return r.BaselineS }, false},
		{"floor: baseline's VM CPU / cores", "#888888", "2 3", "none", func(r Row) *float64 { return r.FloorS }, false},
		{"Tacker's sample driver", "#2e8b3e", "", "diamond", func(r Row) *float64 { return r.TackerS }, true},
	}
	cpuSeries = []series{
		{"heatsible, first run", "#1f5fbf", "", "circle", func(r Row) *float64 { return r.CPUFirst }, false},
		{"heatsible, re-run", "#1f5fbf", "6 4", "square", func(r Row) *float64 { return r.CPURerun }, false},
		{"sequential baseline", "#d9641e", "", "triangle", func(r Row) *float64 { return r.CPUBaseline }, false},
		{"Tacker's sample driver", "#2e8b3e", "", "diamond", func(r Row) *float64 { return r.CPUTacker }, true},
	}
)

// Layout, in SVG user units.
const (
	width      = 960
	height     = 500
	panelW     = 400
	panelH     = 280
	panelTop   = 80
	leftA      = 70
	leftB      = 540
	legendTop  = panelTop + panelH + 50
	fontFamily = "DejaVu Sans, Helvetica, Arial, sans-serif"
)

// Render returns the SVG document for res.
func Render(res Results) ([]byte, error) {
	if len(res.Rows) == 0 {
		return nil, errors.New("no rows")
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="%s" font-size="12">`+"\n",
		width, height, width, height, fontFamily)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", width, height)
	title := "make bench: heatsible instantiate-end against the sequential baseline"
	shown := drawn(res.Rows, wallSeries)
	if len(shown) > len(wallSeries)-1 {
		title += " and Tacker's driver"
	}
	if res.NFSCommonPurged {
		title += " (nfs-common to install)"
	}
	fmt.Fprintf(&b, `<text x="%d" y="24" font-size="16" font-weight="bold">%s</text>`+"\n", leftA-40, esc(title))
	fmt.Fprintf(&b, `<text x="%d" y="44">%s</text>`+"\n", leftA-40, esc(caption(res)))
	xs := xTicks(res.Rows)
	panel(&b, leftA, "wall time, s", "N workers", res.Rows, xs, wallSeries)
	panel(&b, leftB, "CPU seconds, whole machine (bench/cpu.py)", "N workers", res.Rows, xs, cpuSeries)
	lines := legend(&b, leftA, legendTop, shown)
	// bed.sh's verdict on each target, as it wrote it (sorted: the same input draws the same file)
	keys := make([]string, 0, len(res.Targets))
	for k := range res.Targets {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11" fill="#333333">%s: %s</text>`+"\n",
			leftA-40, legendTop+26+16*(lines-1)+16*i, esc(targetName(k)), esc(res.Targets[k]))
	}
	b.WriteString("</svg>\n")
	return b.Bytes(), nil
}

func caption(res Results) string {
	parts := []string{}
	if res.Commit != "" {
		parts = append(parts, "commit "+res.Commit)
	}
	if res.Date != "" {
		parts = append(parts, res.Date)
	}
	if res.NProc > 0 {
		parts = append(parts, fmt.Sprintf("%d cores shared by every host", res.NProc))
	}
	if len(res.PageFaultRange) == 2 {
		parts = append(parts, fmt.Sprintf("page fault %s-%s µs", num(res.PageFaultRange[0]), num(res.PageFaultRange[1])))
	} else if res.Machine.PageFaultUS > 0 {
		parts = append(parts, fmt.Sprintf("page fault %s µs", num(res.Machine.PageFaultUS)))
	}
	if lo, hi, ok := loadRange(res); ok {
		parts = append(parts, fmt.Sprintf("load %s-%s", num(lo), num(hi)))
	}
	parts = append(parts, "single runs")
	return strings.Join(parts, "; ")
}

// loadRange is results.json's load_range, or (older files) the span of the rows' loads.
func loadRange(res Results) (lo, hi float64, ok bool) {
	if len(res.LoadRange) == 2 {
		return res.LoadRange[0], res.LoadRange[1], true
	}
	for _, r := range res.Rows {
		for _, v := range r.Loads {
			if !ok || *v < lo {
				lo = *v
			}
			if !ok || *v > hi {
				hi = *v
			}
			ok = true
		}
	}
	return lo, hi, ok
}

// xTicks are the measured sizes: the axis runs from 0 to the largest.
func xTicks(rows []Row) []int {
	out := make([]int, 0, len(rows))
	for _, r := range rows {
		out = append(out, r.Workers)
	}
	return out
}

func panel(b *bytes.Buffer, left int, ylabel, xlabel string, rows []Row, xs []int, ss []series) {
	xmax := float64(xs[len(xs)-1])
	if xmax <= 0 {
		xmax = 1
	}
	ymax := 0.0
	for _, s := range ss {
		for _, r := range rows {
			if v := s.value(r); v != nil && *v > ymax {
				ymax = *v
			}
		}
	}
	step, top := niceAxis(ymax)
	px := func(n float64) float64 { return float64(left) + n/xmax*panelW }
	py := func(v float64) float64 { return float64(panelTop+panelH) - v/top*panelH }

	fmt.Fprintf(b, `<g class="panel">`+"\n")
	fmt.Fprintf(b, `<text x="%d" y="%d" font-weight="bold">%s</text>`+"\n", left, panelTop-12, esc(ylabel))
	// grid and y ticks
	for v := 0.0; v <= top+step/2; v += step {
		y := py(v)
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e4e4e4"/>`+"\n", left, y, left+panelW, y)
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, y+4, num(v))
	}
	// x ticks at the measured sizes
	for _, n := range xs {
		x := px(float64(n))
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#e4e4e4"/>`+"\n", x, panelTop, x, panelTop+panelH)
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">%d</text>`+"\n", x, panelTop+panelH+16, n)
	}
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#444444"/>`+"\n", left, panelTop, panelW, panelH)
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle">%s</text>`+"\n", left+panelW/2, panelTop+panelH+34, esc(xlabel))
	for _, s := range ss {
		var pts []string
		var marks []string
		for _, r := range rows {
			v := s.value(r)
			if v == nil {
				continue
			}
			x, y := px(float64(r.Workers)), py(*v)
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
			if m := marker(s, x, y); m != "" {
				marks = append(marks, m)
			}
		}
		if len(pts) == 0 {
			continue
		}
		dash := ""
		if s.dash != "" {
			dash = fmt.Sprintf(` stroke-dasharray="%s"`, s.dash)
		}
		fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s><title>%s</title></polyline>`+"\n",
			strings.Join(pts, " "), s.color, dash, esc(s.name))
		for _, m := range marks {
			b.WriteString(m + "\n")
		}
	}
	b.WriteString("</g>\n")
}

func marker(s series, x, y float64) string {
	switch s.marker {
	case "circle":
		return fmt.Sprintf(`<circle cx="%.1f" cy="%.1f" r="4" fill="%s"/>`, x, y, s.color)
	case "square":
		return fmt.Sprintf(`<rect x="%.1f" y="%.1f" width="8" height="8" fill="#ffffff" stroke="%s" stroke-width="2"/>`, x-4, y-4, s.color)
	case "diamond":
		return fmt.Sprintf(`<polygon points="%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f" fill="%s"/>`, x, y-6, x+5, y, x, y+6, x-5, y, s.color)
	case "triangle":
		return fmt.Sprintf(`<polygon points="%.1f,%.1f %.1f,%.1f %.1f,%.1f" fill="%s"/>`, x, y-5, x-5, y+4, x+5, y+4, s.color)
	}
	return ""
}

// drawn is ss without the optional series that no row has a value for.
func drawn(rows []Row, ss []series) []series {
	var out []series
	for _, s := range ss {
		keep := !s.optional
		for _, r := range rows {
			keep = keep || s.value(r) != nil
		}
		if keep {
			out = append(out, s)
		}
	}
	return out
}

// legend draws one entry per series, on as many lines as the width needs;
// it returns the number of lines.
func legend(b *bytes.Buffer, left, top int, ss []series) int {
	x, lines := left, 1
	for _, s := range ss {
		if w := 36 + 7*len(s.name); x > left && x+w > width-10 {
			x, top, lines = left, top+18, lines+1
		}
		dash := ""
		if s.dash != "" {
			dash = fmt.Sprintf(` stroke-dasharray="%s"`, s.dash)
		}
		fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/>`+"\n", x, top, x+30, top, s.color, dash)
		if m := marker(s, float64(x+15), float64(top)); m != "" {
			b.WriteString(m + "\n")
		}
		fmt.Fprintf(b, `<text x="%d" y="%d">%s</text>`+"\n", x+36, top+4, esc(s.name))
		x += 36 + 7*len(s.name) + 24
	}
	return lines
}

// niceAxis returns a tick step and the axis top (a multiple of the step,
// at least max) for a linear axis from 0 with about five ticks.
func niceAxis(max float64) (step, top float64) {
	if max <= 0 || math.IsNaN(max) || math.IsInf(max, 0) {
		return 1, 5
	}
	raw := max / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step = 10 * mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	top = math.Ceil(max/step) * step
	if top < max*1.0001 {
		top += step
	}
	return step, top
}

// num prints a number without trailing zeros (1, 2.5, 0.25).
func num(v float64) string {
	s := fmt.Sprintf("%.2f", v)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

func esc(s string) string { return html.EscapeString(s) }

func targetName(key string) string {
	if n, ok := targetNames[key]; ok {
		return n
	}
	return key
}
