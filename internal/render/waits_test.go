package render

import (
	"maps"
	"os"
	"path"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/heatsible/heatsible/roles"
)

func TestParseWaits(t *testing.T) {
	for _, c := range []struct {
		in   []string
		want map[string]int
		err  string
	}{
		{in: nil, want: nil},
		{in: []string{"api=300"}, want: map[string]int{"api": 300}},
		{in: []string{"cloud-init=20m", "apt=90s"}, want: map[string]int{"cloud-init": 1200, "apt": 90}},
		{in: []string{"api=30", "api=45"}, want: map[string]int{"api": 45}},
		{in: []string{" drain = 1h "}, want: map[string]int{"drain": 3600}},
		{in: []string{"api"}, err: `--wait "api": want NAME=DURATION, e.g. --wait api=300`},
		{in: []string{"=300"}, err: "want NAME=DURATION"},
		{in: []string{"api="}, err: "want NAME=DURATION"},
		{in: []string{"apiserver=300"}, err: `no wait is called "apiserver"; the names are apt, cloud-init, join, drain, api, pv, vim-token, lb`},
		{in: []string{"api=0"}, err: "want whole seconds, at least 1"},
		{in: []string{"api=1.5s"}, err: "want whole seconds, at least 1"},
		{in: []string{"api=-5s"}, err: "want whole seconds, at least 1"},
		{in: []string{"api=five"}, err: `"five" is neither seconds nor a duration`},
		{in: []string{"api=25h"}, err: "is more than 24h0m0s"},
		{in: []string{"api=6000000"}, err: "is more than 24h0m0s"},
	} {
		got, err := ParseWaits(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseWaits(%q) = %v, %v; want an error with %q", c.in, got, err, c.err)
			}
			continue
		}
		if err != nil || !maps.Equal(got, c.want) {
			t.Errorf("ParseWaits(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
}

// TestWaitsNameRoleVariables: every variable a wait sets is a number of
// seconds in its role's defaults, and the role's tasks read it, so no
// --wait sets a variable nothing uses.
func TestWaitsNameRoleVariables(t *testing.T) {
	seen := map[string]bool{}
	for _, w := range Waits {
		if seen[w.Name] {
			t.Errorf("wait %s is listed twice", w.Name)
		}
		seen[w.Name] = true
		for _, v := range w.Vars {
			role, name, _ := strings.Cut(v, "/")
			b, err := roles.FS.ReadFile(path.Join(role, "defaults", "main.yml"))
			if err != nil {
				t.Errorf("%s: %v", w.Name, err)
				continue
			}
			var defaults map[string]any
			if err := yaml.Unmarshal(b, &defaults); err != nil {
				t.Fatal(err)
			}
			if n, ok := defaults[name].(int); !ok || n <= 0 {
				t.Errorf("--wait %s sets %s, which roles/%s/defaults/main.yml gives as %v, not a positive number of seconds", w.Name, name, role, defaults[name])
			}
			if !roleReads(t, role, name) {
				t.Errorf("--wait %s sets %s, which no task of roles/%s reads", w.Name, name, role)
			}
		}
		if d, err := w.Default(); err != nil || d <= 0 {
			t.Errorf("%s: Default() = %d, %v", w.Name, d, err)
		}
	}
}

func roleReads(t *testing.T, role, name string) bool {
	t.Helper()
	for _, dir := range []string{"tasks", "vars"} {
		ents, err := roles.FS.ReadDir(path.Join(role, dir))
		if err != nil {
			continue
		}
		for _, e := range ents {
			b, err := roles.FS.ReadFile(path.Join(role, dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), name) {
				return true
			}
		}
	}
	return false
}

// TestRenderWaits: the bounds set reach group_vars/all as the roles'
// variables (both of api's), and nothing is set without --wait; plan notes
// each bound set.
func TestRenderWaits(t *testing.T) {
	req, topo := fixture(t, "valid")
	for _, c := range []struct {
		waits map[string]int
		want  map[string]any
	}{
		{nil, map[string]any{}},
		{map[string]int{"api": 20, "cloud-init": 1200},
			map[string]any{"pv_register_api_timeout": 20, "k8s_vim_api_timeout": 20, "k8s_join_boot_timeout": 1200}},
	} {
		f, err := renderOp(req, topo, Op{Name: OpInstantiateEnd, Waits: c.waits})
		if err != nil {
			t.Fatal(err)
		}
		var all map[string]any
		if err := yaml.Unmarshal(f.GroupVars["all"], &all); err != nil {
			t.Fatal(err)
		}
		names := map[string]bool{}
		for name := range c.want {
			names[name] = true
		}
		for _, w := range Waits {
			for _, v := range w.Vars {
				_, name, _ := strings.Cut(v, "/")
				names[name] = true
			}
		}
		for name := range names {
			if got, want := all[name], c.want[name]; got != want {
				t.Errorf("waits %v: group_vars/all %s = %v, want %v", c.waits, name, got, want)
			}
		}
	}
	notes := WaitNotes(map[string]int{"api": 20})
	if len(notes) != 1 || notes[0] != "--wait api=20: the run waits at most 20 s instead of 60 s for the Kubernetes API server to answer the first master, before pv_register and k8s_vim change anything" {
		t.Errorf("notes: %q", notes)
	}
}

func TestWaitsHelp(t *testing.T) {
	h := WaitsHelp()
	for _, line := range strings.Split(strings.TrimRight(h, "\n"), "\n") {
		if len(line) > 80 {
			t.Errorf("help line longer than 80: %q", line)
		}
	}
	for _, want := range []string{"  api           60 s  the Kubernetes API server", "  cloud-init   600 s  a node to join"} {
		if !strings.Contains(h, want) {
			t.Errorf("help has no %q:\n%s", want, h)
		}
	}
}

// TestWaitsInCLIDoc: docs/cli.md's table of --wait names and defaults is
// the table Waits and the roles' defaults make: a name or default changed
// in one place fails here until the doc says so too.
func TestWaitsInCLIDoc(t *testing.T) {
	b, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `([a-z-]+)` \\| ([0-9]+) s \\|")
	doc := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(string(b), -1) {
		doc[m[1]] = m[2]
	}
	if len(doc) != len(Waits) {
		t.Errorf("docs/cli.md lists %d waits (%v), Waits has %d", len(doc), doc, len(Waits))
	}
	for _, w := range Waits {
		d, err := w.Default()
		if err != nil {
			t.Fatal(err)
		}
		if got := doc[w.Name]; got != strconv.Itoa(d) {
			t.Errorf("docs/cli.md gives --wait %s's default as %q s, the role's is %d s", w.Name, got, d)
		}
	}
}
