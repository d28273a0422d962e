// Package report turns what an ansible-playbook run did (its events and
// recap) into a review report: for every host and task, whether it would
// change (or changed), was ok, skipped, failed or unreachable, with the diff
// of every change. It is what a reviewer reads after
// "heatsible run OPERATION --check --report FILE" before a change window.
//
// The report is built only from ansible.Events, which the runner has already
// passed through the bundle's masker: no secret value can reach it.
package report

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/heatsible/heatsible/internal/ansible"
	"github.com/heatsible/heatsible/internal/redact"
)

// Outcome is what a task did on one host, in reviewer's words.
type Outcome string

// Outcomes. WouldChange replaces Changed in check mode.
const (
	WouldChange Outcome = "would change"
	Changed     Outcome = "changed"
	OK          Outcome = "ok"
	Skipped     Outcome = "skipped"
	Failed      Outcome = "failed"
	Unreachable Outcome = "unreachable"
)

// Input is what a report is made from.
type Input struct {
	Operation string
	Cluster   string
	// Where ansible-playbook ran: "local" or "ansible host ADDR".
	Where string
	// Check is true for a dry run (--check --diff).
	Check bool
	// Limit and Tags narrowed the run, if set.
	Limit string
	Tags  []string
	// Result is the run's result; nil if ansible-playbook never started.
	Result *ansible.Result
	// Err is the run's error, if any.
	Err error
}

// Report is the review report. Its JSON form is stable: hooks and review
// tools may read it.
type Report struct {
	Operation string    `json:"operation"`
	Cluster   string    `json:"cluster"`
	Where     string    `json:"where"`
	Check     bool      `json:"check"`
	Limit     string    `json:"limit,omitempty"`
	Tags      []string  `json:"tags,omitempty"`
	Started   time.Time `json:"started,omitzero"`
	Finished  time.Time `json:"finished,omitzero"`
	// Complete is false when the run ended before ansible printed its
	// recap (a failure or an interruption): hosts and tasks after that
	// point are missing.
	Complete bool   `json:"complete"`
	Error    string `json:"error,omitempty"`
	Hosts    []Host `json:"hosts"`
	// Changes counts the task results that changed (or would change);
	// ChangedHosts the hosts with at least one.
	Changes      int `json:"changes"`
	ChangedHosts int `json:"changed_hosts"`
	// Summary is "N changes on M hosts" (+ " would be made" in check mode,
	// " made" otherwise).
	Summary string `json:"summary"`
}

// Host is one host's part of the report.
type Host struct {
	Name  string            `json:"name"`
	Recap ansible.HostRecap `json:"recap"`
	Tasks []Task            `json:"tasks"`
}

// Task is one task's result on one host.
type Task struct {
	Play    string  `json:"play"`
	Task    string  `json:"task"`
	Action  string  `json:"action,omitempty"`
	Outcome Outcome `json:"outcome"`
	// Msg is ansible's message for failures and the roles' own reports
	// (debug tasks, e.g. each PV's phase or "would delete: ...").
	Msg string `json:"msg,omitempty"`
	// Diff is the unified diff of the change, when the module gives one.
	Diff string `json:"diff,omitempty"`
}

// Build makes the report of in.
func Build(in Input) *Report {
	r := &Report{Operation: in.Operation, Cluster: in.Cluster, Where: in.Where, Check: in.Check, Limit: in.Limit, Tags: in.Tags, Hosts: []Host{}}
	if in.Err != nil {
		r.Error = in.Err.Error()
	}
	byHost := map[string]*Host{}
	host := func(name string) *Host {
		h := byHost[name]
		if h == nil {
			h = &Host{Name: name, Tasks: []Task{}}
			byHost[name] = h
		}
		return h
	}
	if res := in.Result; res != nil {
		r.Started, r.Finished, r.Complete = res.Started, res.Finished, res.RecapComplete
		for _, e := range res.Events {
			if e.Kind != ansible.KindResult {
				continue
			}
			t := Task{Play: e.Play, Task: e.Task, Action: e.Action, Outcome: outcome(e.Status, in.Check)}
			// A skipped report's message is only ansible's "All items
			// skipped"; a failure's is the reason.
			if t.Outcome == Failed || t.Outcome == Unreachable || (isReport(e.Action) && t.Outcome != Skipped) {
				t.Msg = strings.TrimSpace(e.Msg)
			}
			if t.Outcome == WouldChange || t.Outcome == Changed {
				t.Diff = tidyDiff(e.Diff)
			}
			h := host(e.Host)
			h.Tasks = append(h.Tasks, t)
		}
		for name, rc := range res.Recap {
			host(name).Recap = rc
		}
	}
	names := make([]string, 0, len(byHost))
	for n := range byHost {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		h := byHost[n]
		changes := 0
		for _, t := range h.Tasks {
			if t.Outcome == WouldChange || t.Outcome == Changed {
				changes++
			}
		}
		r.Changes += changes
		if changes > 0 {
			r.ChangedHosts++
		}
		r.Hosts = append(r.Hosts, *h)
	}
	// Always "changes" and "hosts", also for 1: tools grep for this form.
	r.Summary = fmt.Sprintf("%d changes on %d hosts", r.Changes, r.ChangedHosts)
	if in.Check {
		r.Summary += " would be made"
	} else {
		r.Summary += " made"
	}
	return r
}

func outcome(s ansible.Status, check bool) Outcome {
	switch s {
	case ansible.StatusChanged:
		if check {
			return WouldChange
		}
		return Changed
	case ansible.StatusSkipped:
		return Skipped
	case ansible.StatusFailed:
		return Failed
	case ansible.StatusUnreachable:
		return Unreachable
	}
	return OK
}

// tidyDiff names the "after" side of a file diff by the file, not by the
// temporary copy of the template ansible rendered it from (a path under the
// run's .ansible-tmp, different at every run).
func tidyDiff(d string) string {
	lines := strings.Split(d, "\n")
	for i := 1; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], "+++ ") && strings.Contains(lines[i], "/.ansible-tmp/") && strings.HasPrefix(lines[i-1], "--- ") {
			lines[i] = "+++ " + strings.TrimPrefix(lines[i-1], "--- ") + " (after)"
		}
	}
	return strings.Join(lines, "\n")
}

// isReport tells the roles' own reports (debug tasks) from other tasks.
func isReport(action string) bool {
	return action == "debug" || strings.HasSuffix(action, ".debug")
}

// WriteJSON writes the report as indented JSON, without HTML escaping
// ("&<>" as they are: the report is for people and their tools).
func (r *Report) WriteJSON(w io.Writer) error { return redact.EncodeJSON(w, r, "  ") }

// WriteMarkdown writes the report as Markdown: a header, a table of hosts,
// then per host every task with its outcome, the diff of every change and
// the message of every failure, and last the summary line.
func (r *Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	mode := "applied"
	if r.Check {
		mode = "check mode (`ansible-playbook --check --diff`): nothing was changed on any host"
	}
	fmt.Fprintf(&b, "# heatsible %s on %s: review report\n\n", r.Operation, r.Cluster)
	fmt.Fprintf(&b, "- Operation: `%s`\n", r.Operation)
	fmt.Fprintf(&b, "- Cluster: `%s`\n", r.Cluster)
	fmt.Fprintf(&b, "- Ansible ran on: %s\n", r.Where)
	fmt.Fprintf(&b, "- Mode: %s\n", mode)
	if r.Limit != "" {
		fmt.Fprintf(&b, "- Limit: `%s`\n", r.Limit)
	}
	if len(r.Tags) > 0 {
		fmt.Fprintf(&b, "- Tags: `%s`\n", strings.Join(r.Tags, ","))
	}
	if !r.Started.IsZero() {
		fmt.Fprintf(&b, "- Ran: %s to %s (UTC)\n", r.Started.UTC().Format("2006-01-02 15:04:05"), r.Finished.UTC().Format("15:04:05"))
	}
	if r.Error != "" {
		fmt.Fprintf(&b, "- **Error**: %s\n", oneLine(r.Error))
	}
	if !r.Complete {
		b.WriteString("- **Incomplete**: the run ended before Ansible's recap; tasks after that point are not in this report.\n")
	}

	word := "changed"
	if r.Check {
		word = "would change"
	}
	b.WriteString("\n## Hosts\n\n")
	if len(r.Hosts) == 0 {
		b.WriteString("No host ran a task.\n")
	} else {
		fmt.Fprintf(&b, "| host | %s | ok | skipped | failed | unreachable |\n|---|---:|---:|---:|---:|---:|\n", word)
		for _, h := range r.Hosts {
			c := counts(h.Tasks)
			fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d |\n", cell(h.Name), c[WouldChange]+c[Changed], c[OK], c[Skipped], c[Failed], c[Unreachable])
		}
	}
	for _, h := range r.Hosts {
		fmt.Fprintf(&b, "\n## %s\n", h.Name)
		play := "\x00"
		afterBlock := false
		for _, t := range h.Tasks {
			if t.Play != play {
				play = t.Play
				fmt.Fprintf(&b, "\n### %s\n\n", orDash(play))
			} else if afterBlock {
				b.WriteString("\n")
			}
			fmt.Fprintf(&b, "- %s: %s\n", mark(t.Outcome), orDash(t.Task))
			afterBlock = false
			if t.Msg != "" {
				fmt.Fprintf(&b, "\n  ```\n%s\n  ```\n", indent(fence(t.Msg), "  "))
				afterBlock = true
			}
			if t.Diff != "" {
				fmt.Fprintf(&b, "\n  ```diff\n%s\n  ```\n", indent(fence(strings.TrimRight(t.Diff, "\n")), "  "))
				afterBlock = true
			}
		}
	}
	fmt.Fprintf(&b, "\n**%s.**\n", r.Summary)
	_, err := io.WriteString(w, b.String())
	return err
}

func counts(ts []Task) map[Outcome]int {
	c := map[Outcome]int{}
	for _, t := range ts {
		c[t.Outcome]++
	}
	return c
}

// mark renders an outcome so that changes and failures stand out.
func mark(o Outcome) string {
	switch o {
	case WouldChange, Changed, Failed, Unreachable:
		return "**" + string(o) + "**"
	}
	return string(o)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// fence keeps a code block's content from closing it early.
func fence(s string) string { return strings.ReplaceAll(s, "```", "`\u200b``") }

func indent(s, prefix string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "\n")
}
