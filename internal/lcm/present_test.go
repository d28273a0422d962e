package lcm

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
	"github.com/heatsible/heatsible/internal/escapetest"
	"github.com/heatsible/heatsible/internal/fail"
	"github.com/heatsible/heatsible/internal/redact"
	"github.com/heatsible/heatsible/internal/report"
)

// The CLI's presenter (present.go) and the files a run writes at its end
// (cli.go); moved here from cmd/heatsible with the code.

// TestRunOutputEscaped: what a host sends back (a task's message quoting a
// file's content, a play name) reaches the terminal escaped in run's
// progress lines, and the Markdown review report written with --report
// holds no raw control or bidi character either. On b6df54c both carried
// ESC, BEL, U+202E and NUL as they came.
func TestRunOutputEscaped(t *testing.T) {
	var out, errb strings.Builder
	p := NewProgress(&out, &errb, false, true)
	p.Event(ansible.Event{Kind: ansible.KindPlayStart, Play: "play " + escapetest.HostileText})
	p.Event(ansible.Event{Kind: ansible.KindResult, Host: "storage-server", Status: ansible.StatusFailed,
		Task: "nfs_server : Verify " + escapetest.HostileText, Msg: "exports hold " + escapetest.HostileText + "\nsecond line"})
	if r := escapetest.TerminalUnsafe(errb.String()); r >= 0 {
		t.Errorf("progress holds %U unescaped:\n%q", r, errb.String())
	}
	if !strings.Contains(errb.String(), `\x1b[2J`) || !strings.Contains(errb.String(), "\n      second line") {
		t.Errorf("progress lost the message or its lines:\n%s", errb.String())
	}
	res := &ansible.Result{Events: []ansible.Event{
		{Kind: ansible.KindPlayStart, Play: "Storage " + escapetest.HostileText},
		{Kind: ansible.KindResult, Play: "Storage", Task: "nfs_server : Write /etc/exports " + escapetest.HostileText, Host: "storage-server",
			Status: ansible.StatusChanged, Diff: "+/volume/nfs/pv1 " + escapetest.HostileText + "\n"},
		{Kind: ansible.KindResult, Play: "Storage", Task: "t", Host: "storage-server", Status: ansible.StatusFailed, Msg: escapetest.HostileText},
	}, Recap: map[string]ansible.HostRecap{"storage-server": {Changed: 1, Failed: 1}}, RecapComplete: true}
	rep := report.Build(report.Input{Operation: "instantiate-end", Cluster: "k8s-a", Check: true, Result: res})
	file := filepath.Join(t.TempDir(), "review.md")
	if err := WriteReport(file, rep, nil); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(file)
	if r := escapetest.TerminalUnsafe(string(md)); r >= 0 {
		t.Errorf("review.md holds %U unescaped:\n%q", r, md)
	}
	if !strings.Contains(string(md), `\x1b[2J`) {
		t.Errorf("review.md lost the values:\n%s", md)
	}
}

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
	out := &RunOutcome{Operation: "instantiate-end", Cluster: "c & d", Where: "local", Check: true, Result: res}
	runErr := fail.With(fail.HostFailed, errors.New("tasks failed on h: "+string(goHTML)))
	mask := redact.New(maskSecret)
	rep := report.Build(report.Input{Operation: out.Operation, Cluster: out.Cluster, Where: out.Where, Check: true, Result: res, Err: runErr})

	tests := []struct {
		name   string
		json   bool
		output func(t *testing.T, p *Progress) string
	}{
		{"-o json document", true, func(t *testing.T, p *Progress) string {
			p.Finish(out, runErr, rep)
			return p.Stdout.(*bytes.Buffer).String()
		}},
		{"progress lines", false, func(t *testing.T, p *Progress) string {
			for _, e := range events {
				p.Event(e)
			}
			return p.Stderr.(*bytes.Buffer).String()
		}},
		{"report file, Markdown", false, func(t *testing.T, p *Progress) string { return writeAndRead(t, "review.md", rep, mask) }},
		{"report file, JSON", true, func(t *testing.T, p *Progress) string { return writeAndRead(t, "review.json", rep, mask) }},
		{"error as JSON", true, func(t *testing.T, p *Progress) string {
			// run's errors come masked (lcm's record masks them); the
			// CLI writes them without HTML escaping.
			PrintError(p.Stderr, true, errors.New("failed: a & b <c> "+mask.Mask(string(goHTML))), 4)
			return p.Stderr.(*bytes.Buffer).String()
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &Progress{Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}, JSON: tt.json, Verbose: true, Mask: mask}
			text := tt.output(t, p)
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

func writeAndRead(t *testing.T, name string, rep *report.Report, mask *redact.Masker) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), name)
	if err := WriteReport(f, rep, mask); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
