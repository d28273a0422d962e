package lcm

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/heatsible/heatsible/internal/ansible"
	"github.com/heatsible/heatsible/internal/fail"
	"github.com/heatsible/heatsible/internal/redact"
	"github.com/heatsible/heatsible/internal/report"
)

// Progress is the CLI's presenter of a run: it prints events as they
// arrive (Event, RunOptions.OnEvent) and the recap, or -o json's document,
// at the end (Finish).
type Progress struct {
	Stdout, Stderr io.Writer
	// JSON: -o json (events only with Verbose); Verbose: -v.
	JSON, Verbose bool
	// Mask masks what is printed. Events come masked; this masker covers
	// what heatsible itself prints at the end (the -o json document, the
	// report file).
	Mask *redact.Masker
	// VIM goes into -o json's document as "vim", after the masking.
	VIM *VIM

	color bool
}

// NewProgress is a Progress on stdout and stderr; colours only on a
// terminal, without -o json or NO_COLOR.
func NewProgress(stdout, stderr io.Writer, asJSON, verbose bool) *Progress {
	color := false
	if f, ok := stderr.(*os.File); ok && !asJSON && os.Getenv("NO_COLOR") == "" {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			color = true
		}
	}
	return &Progress{Stdout: stdout, Stderr: stderr, JSON: asJSON, Verbose: verbose, color: color}
}

var statusColor = map[ansible.Status]string{
	ansible.StatusOK: "32", ansible.StatusChanged: "33", ansible.StatusFailed: "31",
	ansible.StatusUnreachable: "31", ansible.StatusSkipped: "36",
}

func (p *Progress) paint(s ansible.Status, text string) string {
	if !p.color {
		return text
	}
	return "\x1b[" + statusColor[s] + "m" + text + "\x1b[0m"
}

// Event prints one event.
func (p *Progress) Event(e ansible.Event) {
	if p.JSON && !p.Verbose {
		return
	}
	w := p.Stderr
	// What hosts send back (messages, file contents) is masked, then
	// escaped for the terminal (redact.Terminal): only heatsible's own
	// colour codes reach it as they are.
	show := func(s string) string { return redact.Terminal(p.Mask.Mask(s)) }
	switch e.Kind {
	case ansible.KindPlayStart:
		fmt.Fprintf(w, "== %s\n", show(e.Play))
	case ansible.KindResult:
		if e.Status == ansible.StatusSkipped && !p.Verbose {
			return
		}
		line := fmt.Sprintf("  %-24s %-11s %s", show(e.Host), p.paint(e.Status, string(e.Status)), show(e.Task))
		report := e.Status == ansible.StatusFailed || e.Status == ansible.StatusUnreachable ||
			strings.HasSuffix(e.Action, "debug") // the roles' own reports, e.g. each PV's phase
		if report && e.Msg != "" {
			line += "\n      " + strings.ReplaceAll(show(strings.TrimSpace(e.Msg)), "\n", "\n      ")
		}
		fmt.Fprintln(w, line)
	}
}

// Finish prints the recap table and the outcome (stderr), or -o json's
// document (stdout), with rep (the review report, nil: none) in it.
// Nothing when the run did not start (out nil).
func (p *Progress) Finish(out *RunOutcome, err error, rep *report.Report) {
	if out == nil {
		return
	}
	r := out.Result
	if r == nil { // an operation that ran no playbook (terminate-end)
		r = &ansible.Result{Recap: map[string]ansible.HostRecap{}}
	}
	hosts := make([]string, 0, len(r.Recap))
	for h := range r.Recap {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	changed, changedHosts := 0, 0
	for _, h := range hosts {
		if c := r.Recap[h].Changed; c > 0 {
			changed += c
			changedHosts++
		}
	}
	status := "ok"
	if err != nil {
		status = "FAILED"
	}
	if p.JSON {
		doc := map[string]any{
			"ok": err == nil, "exit_code": fail.Code(err), "operation": out.Operation, "cluster": out.Cluster,
			"where": out.Where, "check": out.Check,
			"recap": r.Recap, "changed": changed, "changed_hosts": changedHosts, "seconds": out.Duration.Seconds(),
			"record": out.Record,
		}
		if rep != nil {
			doc["report"] = rep
		}
		var buf bytes.Buffer
		if redact.EncodeJSON(&buf, doc, "  ") == nil {
			out := p.Mask.MaskJSON(buf.Bytes())
			if p.VIM != nil && err == nil {
				// The one place the token is printed: added after the
				// document was masked.
				if withVIM, werr := withKey(out, "vim", p.VIM); werr == nil {
					out = withVIM
				}
			}
			p.Stdout.Write(out)
		}
		return
	}
	w := tabwriter.NewWriter(p.Stderr, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "\nHOST\tOK\tCHANGED\tFAILED\tUNREACHABLE\tSKIPPED")
	for _, h := range hosts {
		rc := r.Recap[h]
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%d\t%d\n", h, rc.OK, rc.Changed, rc.Failed, rc.Unreachable, rc.Skipped)
	}
	w.Flush()
	fmt.Fprintf(p.Stderr, "%s on %s (%s): %s in %s, %d changes on %d hosts\n",
		out.Operation, out.Cluster, out.Where, status, out.Duration.Round(100*time.Millisecond), changed, changedHosts)
	if err == nil && out.Record != "" {
		fmt.Fprintf(p.Stderr, "heatsible: run record: %s\n", out.Record)
	}
}
