package ansible

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/heatsible/heatsible/internal/redact"
)

// hostileSecret has every character some encoding escapes: &<> (Go's
// json.Marshal), quotes and backslash (JSON, repr, YAML), '%' and '/'
// (URLs), non-ASCII (json.dumps).
const hostileSecret = `P{{ 7*7 }}{% raw %}{#'"\$HOME` + "`id`" + `&<>%41 x/é😀-long-enough`

// TestEventsMaskEveryForm feeds results that hold the secret where
// ansible puts values (a message that is not a string, stderr cut at 2000
// bytes, a loop item and its label, a loop item's message, diffs of
// strings and structures, a message quoting a list) and checks that no
// event holds any form of it, nor the beginning of one where text was cut.
func TestEventsMaskEveryForm(t *testing.T) {
	s := hostileSecret
	pad := func(n int) string { return strings.Repeat("x", n) }
	// straddle puts s across byte n of the text it is in.
	straddle := func(n int) string { return pad(n-10) + s + pad(3000) }
	tests := []struct {
		name string
		host map[string]any
		want string // in Msg or Diff
	}{
		{name: "msg not a string", want: `"password":"********"`,
			host: map[string]any{"failed": true, "msg": map[string]any{"password": s, "n": 1}}},
		{name: "stderr cut at 2000 inside the secret", want: "stderr: xxx",
			host: map[string]any{"failed": true, "msg": "non-zero return code", "stderr": straddle(2000)}},
		{name: "stdout cut at 2000, JSON-escaped secret", want: "stdout: xxx",
			host: map[string]any{"failed": true, "msg": "failed", "stdout": pad(1990) + goJSONForm(s) + pad(100)}},
		{name: "loop item cut at 200", want: "item {",
			host: map[string]any{"failed": true, "msg": "One or more items failed", "results": []any{
				map[string]any{"failed": true, "msg": "bad", "item": map[string]any{"k": pad(170), "password": s}}}}},
		{name: "loop label cut at 200", want: "item xxx",
			host: map[string]any{"failed": true, "msg": "One or more items failed", "results": []any{
				map[string]any{"failed": true, "msg": "bad", "item": "x", "_ansible_item_label": straddle(200)}}}},
		{name: "loop item message cut at 500", want: ": xxx",
			host: map[string]any{"failed": true, "msg": "One or more items failed", "results": []any{
				map[string]any{"failed": true, "msg": straddle(500), "item": "x", "_ansible_item_label": "a"}}}},
		{name: "loop item message not a string", want: `"password":"********"`,
			host: map[string]any{"failed": true, "msg": "One or more items failed", "results": []any{
				map[string]any{"failed": true, "msg": map[string]any{"password": s}, "item": "x", "_ansible_item_label": "a"}}}},
		{name: "message quoting a list (Python repr)", want: "refused ['********']",
			host: map[string]any{"failed": true, "msg": "refused ['" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), "'", `\'`) + "']"}},
		{name: "debug message with YAML and URL forms", want: "yaml: \"********\" url: ********",
			host: map[string]any{"action": "ansible.builtin.debug", "msg": "yaml: \"" + yamlPyForm(s) + "\" url: " + urlForm(s)}},
		{name: "diff of strings", want: "+password=********",
			host: map[string]any{"changed": true, "diff": map[string]any{"before": "", "after": "password=" + s + "\n"}}},
		{name: "diff of a structure", want: `"********"`,
			host: map[string]any{"changed": true, "diff": map[string]any{"before": []any{}, "after": []any{s}}}},
		{name: "diff of a mapping", want: "password: ********",
			host: map[string]any{"changed": true, "diff": map[string]any{"before": map[string]any{}, "after": map[string]any{"password": s}}}},
		{name: "loop diffs", want: "+********",
			host: map[string]any{"changed": true, "results": []any{map[string]any{"diff": []any{map[string]any{"before": "", "after": s + "\n"}}}}}},
		{name: "prepared diff", want: "+pw ********",
			host: map[string]any{"changed": true, "diff": map[string]any{"prepared": "--- a\n+++ b\n+pw " + goJSONForm(s) + "\n"}}},
	}
	m := redact.New(s)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			event := "v2_runner_on_ok"
			if f, _ := tt.host["failed"].(bool); f {
				event = "v2_runner_on_failed"
			}
			line, err := json.Marshal(map[string]any{"_event": event, "hosts": map[string]any{"h": tt.host}, "task": map[string]any{"name": "t"}})
			if err != nil {
				t.Fatal(err)
			}
			var got []Event
			p := newEventParser(m, func(e Event) { got = append(got, e) })
			p.line(string(line))
			if len(got) != 1 {
				t.Fatalf("%d events, want 1", len(got))
			}
			e := got[0]
			out := e.Msg + "\n" + e.Diff
			if !strings.Contains(out, tt.want) {
				t.Errorf("event lacks %q:\nmsg: %s\ndiff: %s", tt.want, clip(e.Msg), clip(e.Diff))
			}
			if leak := leakIn(out, s); leak != "" {
				t.Errorf("%s\nmsg: %s\ndiff: %s", leak, clip(e.Msg), clip(e.Diff))
			}
			// What the record and -o json write: the event as JSON.
			b, _ := json.Marshal(e)
			if leak := leakIn(string(b), s); leak != "" {
				t.Errorf("as JSON: %s", leak)
			}
		})
	}
}

// leakIn says how text holds secret: a form of it, or the first 4 or more
// bytes of a form right before an ellipsis (a cut).
func leakIn(text, secret string) string {
	for _, f := range redact.Forms(secret) {
		if strings.Contains(text, f) {
			return "holds the form " + f
		}
		parts := strings.Split(text, "…")
		for _, part := range parts[:len(parts)-1] { // each followed by "…"
			for k := redact.MinPrefix; k < len(f); k++ {
				if strings.HasSuffix(part, f[:k]) {
					return "ends a cut with " + f[:k]
				}
			}
		}
	}
	return ""
}

func clip(s string) string {
	if len(s) > 300 {
		return s[:150] + " ... " + s[len(s)-150:]
	}
	return s
}

func goJSONForm(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

func yamlPyForm(s string) string {
	for _, f := range redact.NamedForms(s) {
		for _, n := range f.Names {
			if n == "yaml-double-quoted-python" {
				return f.Text
			}
		}
	}
	return ""
}

func urlForm(s string) string {
	for _, f := range redact.NamedForms(s) {
		for _, n := range f.Names {
			if n == "url-userinfo-lower-hex" {
				return f.Text
			}
		}
	}
	return ""
}
