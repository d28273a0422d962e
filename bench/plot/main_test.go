package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// wellFormed fails the test unless svg parses as XML.
func wellFormed(t *testing.T, svg []byte) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(svg))
	for {
		_, err := d.Token()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatalf("the SVG is not well-formed XML: %v", err)
		}
	}
}

func TestRenderGolden(t *testing.T) {
	tests := []struct {
		name, in, golden string
		want             []string // must appear in the SVG
	}{
		{
			// the current results.json: five sizes (given out of order), one baseline missing
			name: "series", in: "testdata/results.json", golden: "testdata/results.svg",
			want: []string{
				"commit abc1234", "page fault 1.9-2.4 µs", "load 0.2-3.1", "2 cores shared by every host",
				">64</text>", ">32</text>", "heatsible, re-run", "sequential baseline",
				"N = 8, CPU seconds &lt;= 1.0 x baseline: NOT met: 1.70 x",
			},
		},
		{
			// results.json as bed.sh wrote it before the page-fault and load ranges and targets
			name: "old format", in: "testdata/results-old.json", golden: "testdata/results-old.svg",
			want: []string{"page fault 16.82 µs", "load 2.13-5.33", ">16</text>"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := os.Open(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			res, err := decode(f)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Render(res)
			if err != nil {
				t.Fatal(err)
			}
			wellFormed(t, got)
			for _, w := range tc.want {
				if !bytes.Contains(got, []byte(w)) {
					t.Errorf("the SVG lacks %q", w)
				}
			}
			if *update {
				if err := os.WriteFile(tc.golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(tc.golden)
			if err != nil {
				t.Fatalf("%v (run with -update to write it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("the SVG differs from %s (run with -update if the change is intended)", tc.golden)
			}
		})
	}
}

// A size without a value leaves its point out rather than drawing it at 0.
func TestMissingValuesAreLeftOut(t *testing.T) {
	res, err := decode(strings.NewReader(`{"rows": [
		{"workers": 2, "heatsible_first_s": 5, "heatsible_rerun_s": 2, "baseline_s": 3},
		{"workers": 4, "heatsible_first_s": 6, "heatsible_rerun_s": 2, "baseline_s": null}]}`))
	if err != nil {
		t.Fatal(err)
	}
	got, err := Render(res)
	if err != nil {
		t.Fatal(err)
	}
	wellFormed(t, got)
	// the baseline's wall-time line has one point (no line down to 0 at N=4), and one
	// marker besides the legend's
	m := regexp.MustCompile(`<polyline points="([^"]*)"[^>]*><title>sequential baseline</title>`).FindSubmatch(got)
	if m == nil {
		t.Fatalf("no baseline line in\n%s", got)
	}
	if pts := strings.Fields(string(m[1])); len(pts) != 1 {
		t.Errorf("baseline line points: %q, want one (its N=4 value is null)", pts)
	}
	if n := strings.Count(string(got), `<polygon `); n != 2 {
		t.Errorf("baseline markers: got %d, want 2 (one point, one in the legend)", n)
	}
}

func TestDecodeRefuses(t *testing.T) {
	for name, in := range map[string]string{
		"no rows":  `{"rows": []}`,
		"not json": `<html>`,
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := decode(strings.NewReader(in)); err == nil {
				t.Fatalf("decode(%q): no error", in)
			}
		})
	}
}

func TestRunWritesFile(t *testing.T) {
	out := filepath.Join(t.TempDir(), "r.svg")
	if err := run("testdata/results.json", out); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	wellFormed(t, b)
	if err := run(filepath.Join(t.TempDir(), "missing.json"), out); err == nil {
		t.Fatal("run with a missing input: no error")
	}
}

func TestNiceAxis(t *testing.T) {
	tests := []struct{ max, step, top float64 }{
		{34.4, 10, 40},
		{5.7, 2, 6},
		{64.1, 20, 80},
		{10, 2, 12}, // a maximum on a tick gets one step of room
		{0, 1, 5},
		{0.9, 0.2, 1},
	}
	for _, tc := range tests {
		step, top := niceAxis(tc.max)
		if step != tc.step || top != tc.top {
			t.Errorf("niceAxis(%v) = %v, %v; want %v, %v", tc.max, step, top, tc.step, tc.top)
		}
	}
}

// Tacker's sample driver (bed.sh with TACKER_SRC) gets a line in both panels
// and a legend entry; a series without it has neither (the golden files).
func TestTackerSeries(t *testing.T) {
	in := `{"rows": [
		{"workers": 2, "heatsible_first_s": 8.5, "heatsible_rerun_s": 4, "baseline_s": 4.5, "floor_s": 0.8,
		 "tacker_s": 12.1, "cpu_first_total": 8.8, "cpu_baseline_total": 2.9, "cpu_tacker_total": 6.5},
		{"workers": 8, "heatsible_first_s": 9.2, "heatsible_rerun_s": 4.2, "baseline_s": 6.8, "floor_s": 1.1,
		 "tacker_s": 30.4, "cpu_first_total": 10.6, "cpu_baseline_total": 4.9, "cpu_tacker_total": 12}],
		"targets": {"cpu_8_le_1_0_baseline": "NOT met"}}`
	res, err := decode(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	got, err := Render(res)
	if err != nil {
		t.Fatal(err)
	}
	wellFormed(t, got)
	lines := regexp.MustCompile(`<polyline points="([^"]*)"[^>]*><title>Tacker&#39;s sample driver</title>`).FindAllSubmatch(got, -1)
	if len(lines) != 2 {
		t.Fatalf("Tacker's lines: %d, want 2 (wall time and CPU)\n%s", len(lines), got)
	}
	if pts := strings.Fields(string(lines[0][1])); len(pts) != 2 {
		t.Errorf("Tacker's wall-time points: %q, want 2", pts)
	}
	for _, w := range []string{"and Tacker&#39;s driver</text>", `>Tacker&#39;s sample driver</text>`} {
		if !bytes.Contains(got, []byte(w)) {
			t.Errorf("the SVG lacks %q", w)
		}
	}
	// the fifth legend entry does not fit beside the others: a second line, and the
	// targets below it
	y := regexp.MustCompile(`<text x="\d+" y="(\d+)">Tacker&#39;s sample driver</text>`).FindSubmatch(got)
	if y == nil || string(y[1]) != "432" {
		t.Errorf("Tacker's legend entry: %q, want on the second legend line (y=432)", y)
	}
	if !bytes.Contains(got, []byte(`y="452" font-size="11" fill="#333333">N = 8, CPU`)) {
		t.Errorf("the target's line is not below the legend's second line:\n%s", got)
	}

	res, err = decode(strings.NewReader(`{"rows": [{"workers": 2, "heatsible_first_s": 8.5, "baseline_s": 4.5}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ = Render(res); bytes.Contains(got, []byte("Tacker")) {
		t.Errorf("no Tacker figures, yet the SVG names Tacker")
	}
}
