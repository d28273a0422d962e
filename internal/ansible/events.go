package ansible

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/heatsible/heatsible/internal/redact"
)

// Status is a host's result for one task.
type Status string

// Task statuses, as ansible names them.
const (
	StatusOK          Status = "ok"
	StatusChanged     Status = "changed"
	StatusFailed      Status = "failed"
	StatusSkipped     Status = "skipped"
	StatusUnreachable Status = "unreachable"
)

// Kind says what an Event reports.
type Kind string

// Event kinds.
const (
	// KindPlayStart: a play begins (Play set).
	KindPlayStart Kind = "play_start"
	// KindTaskStart: a task begins (Play, Task set).
	KindTaskStart Kind = "task_start"
	// KindResult: one host's result for a task.
	KindResult Kind = "result"
)

// Event is one step of a run, delivered live in the order ansible reports
// it. Every string in it has been through the bundle's masker.
type Event struct {
	Kind   Kind      `json:"kind"`
	Time   time.Time `json:"time"`
	Play   string    `json:"play,omitempty"`
	Task   string    `json:"task,omitempty"`
	Action string    `json:"action,omitempty"`
	Host   string    `json:"host,omitempty"`
	Status Status    `json:"status,omitempty"`
	// Msg is ansible's message; for failures it includes the command's
	// stderr/stdout when the module reports them.
	Msg string `json:"msg,omitempty"`
	// Diff is the unified diff of what changed (or would change in check
	// mode), when --diff is on and the module supports it.
	Diff string `json:"diff,omitempty"`
	// Refused: the task refused for safety on purpose (the roles'
	// heatsible.nfv.refuse action sets heatsible_refused in its result),
	// whatever its name. See docs/hooks.md.
	Refused bool `json:"refused,omitempty"`
}

// RefusedKey is the result key of a task that refused for safety: the
// roles' heatsible.nfv.refuse action (collection/plugins/action/refuse.py)
// sets it to true.
const RefusedKey = "heatsible_refused"

// refusedResult reports whether a failed task's result (or, for a loop,
// one of its items) is marked as a refusal.
func refusedResult(r map[string]any) bool {
	if r[RefusedKey] == true {
		return true
	}
	items, _ := r["results"].([]any)
	for _, it := range items {
		if m, ok := it.(map[string]any); ok && m[RefusedKey] == true {
			return true
		}
	}
	return false
}

// HostRecap is ansible's per-host summary (PLAY RECAP).
type HostRecap struct {
	OK          int `json:"ok"`
	Changed     int `json:"changed"`
	Failed      int `json:"failed"`
	Unreachable int `json:"unreachable"`
	Skipped     int `json:"skipped"`
	Rescued     int `json:"rescued"`
	Ignored     int `json:"ignored"`
}

// The wire format of heatsible's stdout callback (CallbackName), which is
// ansible.posix.jsonl's.
type jsonlEvent struct {
	Event string `json:"_event"`
	Play  *struct {
		Name string `json:"name"`
	} `json:"play"`
	Task *struct {
		Name string `json:"name"`
	} `json:"task"`
	Hosts map[string]map[string]any `json:"hosts"`
	Stats map[string]struct {
		OK          int `json:"ok"`
		Changed     int `json:"changed"`
		Failures    int `json:"failures"`
		Unreachable int `json:"unreachable"`
		Skipped     int `json:"skipped"`
		Rescued     int `json:"rescued"`
		Ignored     int `json:"ignored"`
	} `json:"stats"`
}

// eventParser turns jsonl lines into Events and a recap. Feed it lines in
// order; it is safe for one writer and concurrent readers of the result.
type eventParser struct {
	m       *redact.Masker
	mask    func(string) string
	onEvent func(Event)

	mu      sync.Mutex
	play    string
	events  []Event
	recap   map[string]HostRecap
	counted map[string]HostRecap // from events, until stats arrive
	raw     []string
}

// newEventParser masks with m (nothing if nil).
func newEventParser(m *redact.Masker, onEvent func(Event)) *eventParser {
	return &eventParser{m: m, mask: m.Mask, onEvent: onEvent, counted: map[string]HostRecap{}}
}

// line handles one line of ansible-playbook's stdout.
func (p *eventParser) line(line string) {
	trimmed := strings.TrimSpace(line)
	if trimmed == "" {
		return
	}
	var ev jsonlEvent
	if !strings.HasPrefix(trimmed, "{") || json.Unmarshal([]byte(trimmed), &ev) != nil || ev.Event == "" {
		p.mu.Lock()
		p.raw = append(p.raw, p.mask(line))
		p.mu.Unlock()
		return
	}
	now := time.Now()
	var out []Event
	p.mu.Lock()
	switch ev.Event {
	case "v2_playbook_on_play_start":
		if ev.Play != nil {
			p.play = p.mask(ev.Play.Name)
		}
		out = append(out, Event{Kind: KindPlayStart, Time: now, Play: p.play})
	case "v2_playbook_on_task_start", "v2_playbook_on_handler_task_start", "v2_runner_on_start":
		e := Event{Kind: KindTaskStart, Time: now, Play: p.play}
		if ev.Task != nil {
			e.Task = p.mask(ev.Task.Name)
		}
		out = append(out, e)
	case "v2_runner_on_ok", "v2_runner_on_failed", "v2_runner_on_skipped", "v2_runner_on_unreachable":
		hosts := make([]string, 0, len(ev.Hosts))
		for h := range ev.Hosts {
			hosts = append(hosts, h)
		}
		sort.Strings(hosts)
		for _, h := range hosts {
			r := ev.Hosts[h]
			e := Event{Kind: KindResult, Time: now, Play: p.play, Host: h}
			if ev.Task != nil {
				e.Task = p.mask(ev.Task.Name)
			}
			e.Action, _ = r["action"].(string)
			e.Status = statusOf(ev.Event, r)
			e.Msg = p.mask(message(e.Status, r, p.m))
			e.Diff = p.mask(renderDiffs(r))
			e.Refused = e.Status == StatusFailed && refusedResult(r)
			c := p.counted[h]
			switch e.Status {
			case StatusOK:
				c.OK++
			case StatusChanged:
				c.OK++
				c.Changed++
			case StatusFailed:
				c.Failed++
			case StatusSkipped:
				c.Skipped++
			case StatusUnreachable:
				c.Unreachable++
			}
			p.counted[h] = c
			out = append(out, e)
		}
	case "v2_playbook_on_stats":
		p.recap = map[string]HostRecap{}
		for h, s := range ev.Stats {
			p.recap[h] = HostRecap{OK: s.OK, Changed: s.Changed, Failed: s.Failures, Unreachable: s.Unreachable,
				Skipped: s.Skipped, Rescued: s.Rescued, Ignored: s.Ignored}
		}
	}
	p.events = append(p.events, out...)
	p.mu.Unlock()
	if p.onEvent != nil {
		for _, e := range out {
			p.onEvent(e)
		}
	}
}

// result returns the events, the recap (ansible's own if the run got that
// far, else counted from the results seen) and non-JSON stdout lines.
func (p *eventParser) result() (events []Event, recap map[string]HostRecap, complete bool, raw []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	events = append([]Event(nil), p.events...)
	raw = append([]string(nil), p.raw...)
	src, complete := p.recap, p.recap != nil
	if !complete {
		src = p.counted
	}
	recap = make(map[string]HostRecap, len(src))
	for h, r := range src {
		recap[h] = r
	}
	return events, recap, complete, raw
}

func statusOf(event string, r map[string]any) Status {
	switch event {
	case "v2_runner_on_failed":
		return StatusFailed
	case "v2_runner_on_skipped":
		return StatusSkipped
	case "v2_runner_on_unreachable":
		return StatusUnreachable
	}
	if b, _ := r["changed"].(bool); b {
		return StatusChanged
	}
	return StatusOK
}

// message picks a useful one-line-ish message out of a module result.
// Every part is masked before it is cut short (m.Truncate), so that a
// secret across a cut leaves no beginning behind; values that are not
// strings are written as JSON without HTML escaping.
func message(st Status, r map[string]any, m *redact.Masker) string {
	str := func(k string) string {
		switch v := r[k].(type) {
		case string:
			return strings.TrimSpace(v)
		case nil:
			return ""
		default:
			return jsonText(v)
		}
	}
	msg := m.Mask(str("msg"))
	if st != StatusFailed && st != StatusUnreachable {
		return msg
	}
	var parts []string
	if msg != "" {
		parts = append(parts, msg)
	}
	for _, k := range []string{"stderr", "stdout", "module_stderr", "module_stdout"} {
		if v := m.Mask(str(k)); v != "" && v != msg {
			parts = append(parts, k+": "+m.Truncate(v, 2000))
			break
		}
	}
	// Loops: report the failed items' messages.
	if items, ok := r["results"].([]any); ok {
		for _, it := range items {
			it, ok := it.(map[string]any)
			if !ok {
				continue
			}
			if f, _ := it["failed"].(bool); f {
				itemMsg, _ := it["msg"].(string)
				if itemMsg == "" && it["msg"] != nil {
					itemMsg = jsonText(it["msg"])
				}
				// The loop's label names the item; the item itself may be a
				// whole registered result (hundreds of characters).
				item := m.Truncate(jsonText(it["item"]), 200)
				if l, ok := it["_ansible_item_label"].(string); ok && l != "" {
					item = m.Truncate(l, 200)
				}
				parts = append(parts, fmt.Sprintf("item %s: %s", item, m.Truncate(itemMsg, 500)))
			}
		}
	}
	return strings.Join(parts, "; ")
}

// jsonText writes v as JSON for people: "&<>" as they are, not
// \u0026\u003c\u003e.
func jsonText(v any) string {
	b, err := redact.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// truncate cuts s to at most n bytes, on a character boundary, adding
// "…". It does not mask: give it masked text.
func truncate(s string, n int) string { return (*redact.Masker)(nil).Truncate(s, n) }

// renderDiffs renders a module's "diff" (one object or a list; loops keep
// theirs in results[].diff) as unified diffs.
func renderDiffs(r map[string]any) string {
	var diffs []any
	collect := func(d any) {
		switch d := d.(type) {
		case []any:
			diffs = append(diffs, d...)
		case map[string]any:
			diffs = append(diffs, d)
		}
	}
	collect(r["diff"])
	if items, ok := r["results"].([]any); ok {
		for _, it := range items {
			if m, ok := it.(map[string]any); ok {
				collect(m["diff"])
			}
		}
	}
	var sb strings.Builder
	for _, d := range diffs {
		m, ok := d.(map[string]any)
		if !ok {
			continue
		}
		if prepared, ok := m["prepared"].(string); ok && prepared != "" {
			sb.WriteString(strings.TrimRight(prepared, "\n") + "\n")
			continue
		}
		before, bok := m["before"]
		after, aok := m["after"]
		if !bok && !aok {
			continue
		}
		bh, _ := m["before_header"].(string)
		ah, _ := m["after_header"].(string)
		if bh == "" {
			bh = "before"
		}
		if ah == "" {
			ah = "after"
		}
		sb.WriteString(unifiedDiff(bh, ah, diffText(before), diffText(after)))
	}
	return sb.String()
}

// diffText renders a before/after value: strings as they are, structures
// (e.g. the file module's {"path": ..., "state": ...}) as sorted "k: v"
// lines.
func diffText(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var sb strings.Builder
		for _, k := range keys {
			fmt.Fprintf(&sb, "%s: %v\n", k, v[k])
		}
		return sb.String()
	default:
		var b strings.Builder
		if err := redact.EncodeJSON(&b, v, "  "); err != nil {
			return fmt.Sprint(v) + "\n"
		}
		return b.String()
	}
}
