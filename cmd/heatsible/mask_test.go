package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heatsible/heatsible/internal/ansible"
	"github.com/heatsible/heatsible/internal/fail"
	"github.com/heatsible/heatsible/internal/lcm"
	"github.com/heatsible/heatsible/internal/redact"
	review "github.com/heatsible/heatsible/internal/report"
)

// maskSecret has what Go's json.Marshal escapes (&<>) and what JSON,
// repr and YAML escape.
const maskSecret = `P{{ 7*7 }}{% raw %}{#'"\$HOME` + "`id`" + `&<>%41 x/é-long-enough`

// TestOutputMasksEveryForm: what "run" writes at its end (the -o json
// document on stdout, the --report file in both formats, the progress
// lines and the error on stderr) holds no form of a secret even when what
// it is given does (an event with the secret JSON-escaped by Go, a task
// name with the secret as Python's repr writes it), every JSON output is
// valid, and "&<>" are written as they are, not \u0026\u003c\u003e.
func TestOutputMasksEveryForm(t *testing.T) {
	goHTML, _ := json.Marshal(maskSecret)
	repr := strings.ReplaceAll(strings.ReplaceAll(maskSecret, `\`, `\\`), "'", `\'`)
	events := []ansible.Event{
		{Kind: ansible.KindResult, Play: "p & q", Task: "a & b <c>", Host: "h", Status: ansible.StatusFailed, Action: "ansible.builtin.command",
			Msg: `{"password":` + string(goHTML) + `}`},
		{Kind: ansible.KindResult, Play: "p & q", Task: "refused ['" + repr + "']", Host: "h", Status: ansible.StatusChanged,
			Diff: "--- a\n+++ b\n+pw=" + maskSecret + "\n"},
	}
	res := &ansible.Result{ExitCode: 2, Events: events, Recap: map[string]ansible.HostRecap{"h": {Failed: 1, Changed: 1}}, RecapComplete: true,
		Started: time.Now(), Finished: time.Now()}
	out := &lcm.RunOutcome{Operation: "instantiate-end", Cluster: "c & d", Where: "local", Check: true, Result: res}
	runErr := fail.With(fail.HostFailed, errors.New("tasks failed on h: "+string(goHTML)))
	mask := redact.New(maskSecret)
	rep := review.Build(review.Input{Operation: out.Operation, Cluster: out.Cluster, Where: out.Where, Check: true, Result: res, Err: runErr})

	tests := []struct {
		name   string
		json   bool
		output func(t *testing.T, g *globals) string
	}{
		{"-o json document", true, func(t *testing.T, g *globals) string {
			p := &progress{g: g, mask: mask}
			p.finish(out, runErr, rep)
			return g.stdout.(*bytes.Buffer).String()
		}},
		{"progress lines", false, func(t *testing.T, g *globals) string {
			p := &progress{g: g, mask: mask}
			for _, e := range events {
				p.event(e)
			}
			return g.stderr.(*bytes.Buffer).String()
		}},
		{"report file, Markdown", false, func(t *testing.T, g *globals) string { return writeAndRead(t, "review.md", rep, mask) }},
		{"report file, JSON", true, func(t *testing.T, g *globals) string { return writeAndRead(t, "review.json", rep, mask) }},
		{"error as JSON", true, func(t *testing.T, g *globals) string {
			// run's errors come masked (lcm's record masks them); the
			// CLI writes them without HTML escaping.
			report(g, errors.New("failed: a & b <c> "+mask.Mask(string(goHTML))), 4)
			return g.stderr.(*bytes.Buffer).String()
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := &globals{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}, verbose: true}
			if tt.json {
				g.output = "json"
			}
			text := tt.output(t, g)
			if text == "" {
				t.Fatal("no output")
			}
			for _, f := range redact.Forms(maskSecret) {
				if strings.Contains(text, f) {
					t.Errorf("the output holds the form %q:\n%s", f, text)
				}
			}
			if !strings.Contains(text, redact.Masked) {
				t.Errorf("nothing was masked:\n%s", text)
			}
			if tt.json {
				if !json.Valid([]byte(text)) {
					t.Errorf("not valid JSON:\n%s", text)
				}
				if strings.Contains(text, `\u0026`) || !strings.Contains(text, "a & b <c>") {
					t.Errorf("&<> HTML-escaped:\n%s", text)
				}
			}
		})
	}
}

func writeAndRead(t *testing.T, name string, rep *review.Report, mask *redact.Masker) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), name)
	if err := writeReport(f, rep, mask); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
