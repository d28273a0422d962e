package render

import (
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/heatsible/heatsible/roles"
)

// A Wait is one bound of the roles' waits that an operator can set with
// `heatsible run --wait NAME=DURATION`, for a cloud slower than the roles'
// defaults: the role variables it sets (each role's defaults/main.yml holds
// the default, read from the embedded roles: one copy), and what it bounds.
// The roles' messages name a wait by its flag when it runs out ("re-run
// with --wait api=SECONDS for a longer one").
type Wait struct {
	Name string
	// Vars are the role variables the bound sets, as role/variable; the
	// first one's default is the wait's.
	Vars []string
	What string
}

// Waits are the bounds --wait sets.
var Waits = []Wait{
	{"apt", []string{"apt_wait/apt_wait_timeout"},
		"cloud-init and the dpkg lock before a role installs packages, and apt-get update (nfs_server, nfs_client)"},
	{"cloud-init", []string{"k8s_join/k8s_join_boot_timeout"},
		"a node to join: its cloud-init and the dpkg lock, before heatsible looks for kubeadm (heal-end, scale-end without kubespray)"},
	{"join", []string{"k8s_join/k8s_join_node_timeout"},
		"the joined nodes' Node objects after kubeadm join"},
	{"drain", []string{"k8s_node/k8s_node_drain_timeout"},
		"each node's kubectl drain (heal-start, scale-start)"},
	{"api", []string{"pv_register/pv_register_api_timeout", "k8s_vim/k8s_vim_api_timeout"},
		"the Kubernetes API server to answer the first master, before pv_register and k8s_vim change anything"},
	{"pv", []string{"pv_register/pv_wait_timeout"},
		"the PVs to be Available or Bound after they are applied, and to be gone after they are deleted"},
	{"vim-token", []string{"k8s_vim/k8s_vim_token_timeout"},
		"the token controller to fill the VIM's token Secret"},
	{"lb", []string{"external_lb/external_lb_timeout"},
		"each command of the external load balancer's script"},
}

// maxWait bounds a --wait: a day is beyond any real wait, and a typo such
// as 6000000 is caught.
const maxWait = 24 * time.Hour

// ParseWaits reads --wait's NAME=DURATION values (DURATION: seconds, or a
// Go duration such as 90s or 15m) into seconds by name. A name given twice
// takes the last value.
func ParseWaits(specs []string) (map[string]int, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	out := map[string]int{}
	for _, s := range specs {
		name, val, ok := strings.Cut(s, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" || strings.TrimSpace(val) == "" {
			return nil, fmt.Errorf("--wait %q: want NAME=DURATION, e.g. --wait api=300 or --wait cloud-init=20m (names: %s)", s, waitNames())
		}
		if findWait(name) == nil {
			return nil, fmt.Errorf("--wait %s: no wait is called %q; the names are %s (heatsible run --help)", s, name, waitNames())
		}
		d, err := parseWaitDuration(strings.TrimSpace(val))
		if err != nil {
			return nil, fmt.Errorf("--wait %s: %v", s, err)
		}
		out[name] = int(d / time.Second)
	}
	return out, nil
}

func parseWaitDuration(v string) (time.Duration, error) {
	var d time.Duration
	if n, err := strconv.ParseUint(v, 10, 32); err == nil {
		d = time.Duration(n) * time.Second
	} else if d, err = time.ParseDuration(v); err != nil {
		return 0, fmt.Errorf("%q is neither seconds nor a duration such as 90s or 15m", v)
	}
	if d < time.Second || d%time.Second != 0 {
		return 0, fmt.Errorf("%s: want whole seconds, at least 1", v)
	}
	if d > maxWait {
		return 0, fmt.Errorf("%s is more than %s", v, maxWait)
	}
	return d, nil
}

func findWait(name string) *Wait {
	for i := range Waits {
		if Waits[i].Name == name {
			return &Waits[i]
		}
	}
	return nil
}

func waitNames() string {
	var n []string
	for _, w := range Waits {
		n = append(n, w.Name)
	}
	return strings.Join(n, ", ")
}

// Default is the wait's bound in seconds when --wait does not set it: its
// first variable's value in its role's defaults/main.yml.
func (w Wait) Default() (int, error) {
	role, name, _ := strings.Cut(w.Vars[0], "/")
	b, err := roles.FS.ReadFile(path.Join(role, "defaults", "main.yml"))
	if err != nil {
		return 0, err
	}
	var defaults map[string]any
	if err := yaml.Unmarshal(b, &defaults); err != nil {
		return 0, fmt.Errorf("roles/%s/defaults/main.yml: %w", role, err)
	}
	n, ok := defaults[name].(int)
	if !ok {
		return 0, fmt.Errorf("roles/%s/defaults/main.yml: %s is %v, not a number of seconds", role, name, defaults[name])
	}
	return n, nil
}

// WaitsHelp is --wait's part of run's help: each name, its default and what
// it bounds.
func WaitsHelp() string {
	var b strings.Builder
	for _, w := range Waits {
		d, err := w.Default()
		def := fmt.Sprintf("%d s", d)
		if err != nil {
			def = "?"
		}
		line := fmt.Sprintf("  %-11s %6s ", w.Name, def)
		indent := strings.Repeat(" ", len(line))
		for _, word := range strings.Fields(w.What) {
			if len(line)+1+len(word) > 80 && len(line) > len(indent) {
				b.WriteString(line + "\n")
				line = indent
			}
			line += " " + word
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

// waitVars are the role variables of the waits set (name -> seconds).
func waitVars(waits map[string]int) map[string]any {
	vars := map[string]any{}
	for name, s := range waits {
		w := findWait(name)
		if w == nil {
			continue // ParseWaits refused it
		}
		for _, v := range w.Vars {
			_, n, _ := strings.Cut(v, "/")
			vars[n] = s
		}
	}
	return vars
}

// WaitNotes say, for plan and validate's readers, which bounds a run takes
// from --wait.
func WaitNotes(waits map[string]int) []string {
	var notes []string
	for _, w := range Waits {
		s, ok := waits[w.Name]
		if !ok {
			continue
		}
		d, err := w.Default()
		def := ""
		if err == nil {
			def = fmt.Sprintf(" instead of %d s", d)
		}
		notes = append(notes, fmt.Sprintf("--wait %s=%d: the run waits at most %d s%s for %s", w.Name, s, s, def, w.What))
	}
	return notes
}
