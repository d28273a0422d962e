package ansible

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/heatsible/heatsible/internal/remote"
)

// The Ansible that runs the playbooks.
//
// The Ansible host is the one that runs kubespray, and its Ansible is
// whatever the operator installed for kubespray: Debian 12's ansible-core
// 2.14, Ubuntu 24.04's 2.16, a virtualenv with kubespray's pin (2.16 to
// 2.18 for kubespray 2.25 to main), a bare `pip install ansible-core`, or
// Ansible 2.9 for the kubespray 2.16 of Tacker's guide. heatsible learns
// which ansible-playbook it will run for its roles and for kubespray, their
// ansible-core version, the collections its roles use and kubespray's own
// bounds, in the lock session's first answer (RemoteRunner.Lock; with
// --local, LocalRunner.Probe), and refuses before anything changes when
// one is outside what it supports (CheckAnsible).

// The ansible-core versions heatsible's roles run under: MinCore <= v <
// MaxCore. Each was run by the matrix of testbed/ansible (docs/kubespray.md).
const (
	MinCore = "2.14"
	MaxCore = "2.20"
)

// CoreRange is the supported range in words: "2.14 to 2.19".
func CoreRange() string { return MinCore + " to " + prevMinor(MaxCore) }

// MinKubesprayAnsible is the oldest Ansible heatsible runs kubespray's
// playbooks with: its callback (heatsible_jsonl) was run under Ansible
// 2.9.20 (kubespray 2.16's pin) and every ansible-core since 2.14.
const MinKubesprayAnsible = "2.9"

// RoleCollections are the collections heatsible's roles use that the
// Ansible host must have, and the modules of each (probe_test checks it
// against the roles' tasks); heatsible.nfv, the roles' own, comes with
// every run bundle.
var RoleCollections = map[string][]string{
	"ansible.posix":     {"mount"},
	"community.general": {"filesystem"},
}

// Purposes of an ansible-playbook.
const (
	ForRoles     = "heatsible"
	ForKubespray = "kubespray"
)

// AnsibleWant is one ansible-playbook a run will use.
type AnsibleWant struct {
	// For is ForRoles or ForKubespray.
	For string
	// Setting is what the operator gave: "" (the default), a command name
	// looked up in PATH, or an absolute ("~/" for the login's home) path of
	// an ansible-playbook or of a virtualenv (its bin/ansible-playbook).
	Setting string
	// Candidates are tried in order when Setting is "" (kubespray's
	// virtualenvs), before ansible-playbook in PATH.
	Candidates []string
	// Dir is where it runs: its ansible.cfg applies (kubespray's root).
	// "": heatsible's bundle, whose ansible.cfg sets nothing the probe
	// reads, so the probe reads no configuration file.
	Dir string
	// Collections are the collections it needs, with their modules.
	Collections map[string][]string
	// BoundsFiles are kubespray's ansible_version.yml candidates: the
	// first that exists gives kubespray's own bounds.
	BoundsFiles []string
	// SSHPass: Ansible logs in to the nodes with passwords, through sshpass
	// before ansible-core 2.19, which must then be in PATH.
	SSHPass bool
}

// AnsibleFound is what the probe found for one AnsibleWant.
type AnsibleFound struct {
	For string `json:"for"`
	// Path is the ansible-playbook, resolved; Version its ansible(-core)
	// version; Python the interpreter it runs with; Venv its virtualenv.
	Path    string `json:"path,omitempty"`
	Version string `json:"version,omitempty"`
	Python  string `json:"python,omitempty"`
	Venv    string `json:"venv,omitempty"`
	// Collections found (of those wanted), by name.
	Collections map[string]CollectionFound `json:"collections,omitempty"`
	// Bounds are kubespray's own, from its ansible_version.yml.
	Bounds *Bounds `json:"bounds,omitempty"`
	// SSHPass: sshpass is in the PATH the run gets.
	SSHPass bool `json:"sshpass"`
	// Error says why nothing usable was found.
	Error string `json:"error,omitempty"`
}

// CollectionFound is a collection where that Ansible loads it from.
type CollectionFound struct {
	Path    string `json:"path"`
	Version string `json:"version,omitempty"`
	// Missing are wanted modules it does not have.
	Missing []string `json:"missing,omitempty"`
}

// Bounds are kubespray's: Min <= version < Max.
type Bounds struct {
	File string `json:"file"`
	Min  string `json:"minimal,omitempty"`
	Max  string `json:"maximal,omitempty"`
}

// ErrAnsibleUnsupported: an ansible-playbook a run needs is missing or
// outside what heatsible (or kubespray) supports. Nothing was changed.
var ErrAnsibleUnsupported = errors.New("unsupported Ansible")

// Summary is one line for the operator: which ansible-playbook, which
// version, from where.
func (f AnsibleFound) Summary() string {
	if f.Error != "" {
		return f.Error
	}
	s := f.Path + " (" + coreName(f.Version) + " " + f.Version
	if f.Venv != "" {
		s += ", virtualenv " + f.Venv
	}
	names := make([]string, 0, len(f.Collections))
	for n := range f.Collections {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		s += ", " + n + " " + f.Collections[n].Version
	}
	if f.Bounds != nil && f.Bounds.Min != "" && f.Bounds.Max != "" {
		s += fmt.Sprintf("; kubespray's %s wants %s <= version < %s", path.Base(f.Bounds.File), f.Bounds.Min, f.Bounds.Max)
	}
	return s + ")"
}

// coreName is what Ansible calls itself in that version.
func coreName(v string) string {
	switch {
	case versionLess(v, "2.10"):
		return "ansible"
	case versionLess(v, "2.11"):
		return "ansible-base"
	}
	return "ansible-core"
}

// CheckAnsible says whether f, found on where for w, may run: nil, or an
// error wrapping ErrAnsibleUnsupported that names what was found, what
// heatsible supports and how to get it.
func CheckAnsible(w AnsibleWant, f AnsibleFound, where string) error {
	who := "heatsible's roles"
	if w.For == ForKubespray {
		who = "kubespray"
	}
	setting := settingName(w)
	unsupported := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrAnsibleUnsupported, fmt.Sprintf(format, args...))
	}
	switch {
	case f.Error == "not found" && f.Path != "":
		return unsupported("%s: %s: no ansible-playbook to run %s with: %s is not there (or not an executable file). %s", where, setting, who, f.Path, getOne(w, setting))
	case f.Error == "not found":
		return unsupported("%s: %s: no ansible-playbook to run %s with: none in the PATH of the login. %s", where, setting, who, getOne(w, setting))
	case f.Error != "":
		return unsupported("%s: %s: no ansible-playbook to run %s with: %s. %s", where, setting, who, f.Error, getOne(w, setting))
	}
	if f.Version == "" {
		return unsupported("%s: %s: could not tell its version. %s", where, f.Path, getOne(w, setting))
	}
	if w.For == ForRoles {
		if versionLess(f.Version, MinCore) || !versionLess(f.Version, MaxCore) {
			return unsupported("%s: %s runs heatsible's roles with %s, which is %s %s; heatsible supports ansible-core %s. %s",
				where, setting, f.Path, coreName(f.Version), f.Version, CoreRange(), getOne(w, setting))
		}
	} else if versionLess(f.Version, MinKubesprayAnsible) {
		return unsupported("%s: %s runs kubespray with %s, which is %s %s; heatsible runs kubespray with Ansible %s or later. %s",
			where, setting, f.Path, coreName(f.Version), f.Version, MinKubesprayAnsible, getOne(w, setting))
	}
	if b := f.Bounds; b != nil && b.Min != "" && b.Max != "" {
		if versionLess(f.Version, b.Min) || !versionLess(f.Version, b.Max) {
			return unsupported("%s: %s runs kubespray with %s, which is %s %s, but this kubespray's %s wants %s <= version < %s (it would stop there itself, after heatsible's first changes). Install the Ansible of this kubespray release's requirements.txt in a virtualenv (python3 -m venv %s/venv && %s/venv/bin/pip install -r %s/requirements.txt) and give it as ansible.kubespray_ansible_playbook (or --kubespray-ansible-playbook), or leave that unset: heatsible then finds %s/venv",
				where, setting, f.Path, coreName(f.Version), f.Version, b.File, b.Min, b.Max, w.Dir, w.Dir, w.Dir, w.Dir)
		}
	}
	// 2.19 and later give ssh the password through SSH_ASKPASS instead.
	if w.SSHPass && !f.SSHPass && versionLess(f.Version, "2.19") {
		return unsupported("%s: no sshpass in the PATH %s runs with: Ansible logs in to the nodes with the request's passwords through it (every ansible-core before 2.19 needs it for that). Install it (Debian, Ubuntu: apt install sshpass)", where, f.Path)
	}
	var missing []string
	names := make([]string, 0, len(w.Collections))
	for n := range w.Collections {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c, ok := f.Collections[n]
		switch {
		case !ok:
			missing = append(missing, "no "+n)
		case len(c.Missing) > 0:
			missing = append(missing, fmt.Sprintf("%s %s (%s) without %s", n, c.Version, c.Path, strings.Join(c.Missing, ", ")))
		}
	}
	if len(missing) > 0 {
		var uses []string
		for _, n := range names {
			for _, m := range w.Collections[n] {
				uses = append(uses, n+"."+m)
			}
		}
		return unsupported("%s: %s (%s %s) has %s; heatsible's roles use %s. Install them where that Ansible finds them: ansible-galaxy collection install %s "+
			"(without Galaxy, from their tarballs: ansible-galaxy collection download on a machine that reaches it, then ansible-galaxy collection install ./*.tar.gz), "+
			"or install the ansible package, which has both, in place of the bare ansible-core (pip install 'ansible>=7,<13' in its virtualenv; Debian 12 and Ubuntu 24.04: apt install ansible)",
			where, f.Path, coreName(f.Version), f.Version, strings.Join(missing, ", "), strings.Join(uses, " and "), strings.Join(names, " "))
	}
	return nil
}

func settingName(w AnsibleWant) string {
	field := "ansible.ansible_playbook"
	if w.For == ForKubespray {
		field = "ansible.kubespray_ansible_playbook"
	}
	if w.Setting == "" {
		return field + " (unset)"
	}
	return field + " " + strconv.Quote(w.Setting)
}

// getOne says how to get a supported Ansible for w.
func getOne(w AnsibleWant, setting string) string {
	if w.For == ForKubespray {
		return "Give kubespray's ansible-playbook (or its virtualenv) as ansible.kubespray_ansible_playbook, or --kubespray-ansible-playbook; unset, heatsible looks for " +
			strings.Join(append(slices.Clone(w.Candidates), "ansible-playbook in PATH"), ", then ")
	}
	return fmt.Sprintf("Install a supported one (a virtualenv from PyPI: python3 -m venv ~/ansible && ~/ansible/bin/pip install 'ansible>=7,<13', "+
		"which brings ansible-core %s and the collections heatsible's roles use; or your distribution's package: Debian 12 and Ubuntu 24.04: apt install ansible) "+
		"and give it as ansible.ansible_playbook (e.g. ~/ansible, the virtualenv) or --ansible-playbook (now %s)", CoreRange(), setting)
}

// prevMinor is the minor release before v ("2.20" -> "2.19").
func prevMinor(v string) string {
	p := strings.Split(v, ".")
	if len(p) == 2 {
		if n, err := strconv.Atoi(p[1]); err == nil && n > 0 {
			return p[0] + "." + strconv.Itoa(n-1)
		}
	}
	return v
}

// versionLess compares dotted versions by their numeric parts ("2.19.0rc1"
// is 2.19.0).
func versionLess(a, b string) bool {
	pa, pb := versionParts(a), versionParts(b)
	for i := 0; i < len(pa) || i < len(pb); i++ {
		var x, y int
		if i < len(pa) {
			x = pa[i]
		}
		if i < len(pb) {
			y = pb[i]
		}
		if x != y {
			return x < y
		}
	}
	return false
}

func versionParts(v string) []int {
	var out []int
	for _, p := range strings.Split(v, ".") {
		n := 0
		digits := false
		for _, r := range p {
			if r < '0' || r > '9' {
				break
			}
			n, digits = n*10+int(r-'0'), true
		}
		if !digits {
			break
		}
		out = append(out, n)
	}
	return out
}

// probePy runs with the interpreter of the ansible-playbook it probes
// (Python 3.6+, Ansible 2.9+): argv FOR PATH VENV WANT_JSON; it prints
// "ansible FOR {json}" (AnsibleFound) and never fails.
const probePy = `import json, os, re, shutil, sys
f, ap, venv, want = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
out = {"for": f, "path": ap, "python": sys.executable, "sshpass": bool(shutil.which("sshpass"))}
if venv:
    out["venv"] = venv
def done():
    sys.stdout.write("ansible %s %s\n" % (f, json.dumps(out, sort_keys=True)))
    sys.stdout.flush()
    os._exit(0)
try:
    from ansible.release import __version__
    out["version"] = __version__
except Exception as e:
    out["error"] = "%s cannot import ansible (%s: %s)" % (ap, sys.executable, e)
    done()
for fn in want.get("bounds") or []:
    try:
        with open(fn) as fh:
            text = fh.read()
    except (IOError, OSError):
        continue
    b = {"file": fn}
    for k in ("minimal", "maximal"):
        m = re.search(r"^\s*%s_ansible_version:\s*['\"]?([0-9][0-9.]*)" % k, text, re.M)
        if m:
            b[k] = m.group(1)
    out["bounds"] = b
    break
colls = want.get("collections") or {}
if colls:
    paths, scan = [], True
    try:
        from ansible import constants as C
        paths = list(getattr(C, "COLLECTIONS_PATHS", None) or [])
        scan = getattr(C, "COLLECTIONS_SCAN_SYS_PATH", True)
    except Exception:
        pass
    if scan:
        paths += [p for p in sys.path if p]
    found = {}
    for name in sorted(colls):
        ns, coll = name.split(".", 1)
        for p in paths:
            p = os.path.expanduser(p).rstrip("/")
            base = p if os.path.basename(p) == "ansible_collections" else os.path.join(p, "ansible_collections")
            d = os.path.join(base, ns, coll)
            if not os.path.isdir(d):
                continue
            ver = ""
            try:
                with open(os.path.join(d, "MANIFEST.json")) as fh:
                    ver = json.load(fh)["collection_info"]["version"]
            except Exception:
                try:
                    with open(os.path.join(d, "galaxy.yml")) as fh:
                        m = re.search(r"^version:\s*['\"]?([^'\"\s]+)", fh.read(), re.M)
                        ver = m.group(1) if m else ""
                except (IOError, OSError):
                    pass
            found[name] = {"path": d, "version": ver, "missing": [m for m in colls[name] if not os.path.exists(os.path.join(d, "plugins", "modules", m + ".py"))]}
            break
    out["collections"] = found
done()
`

// probeTimeout bounds each step of the probe on the Ansible host (an
// ansible-playbook wrapper that hangs on --version must not hold the run;
// two steps stay within lockReplyTimeout).
const probeTimeout = 20

// probeFuncs resolve a setting to an ansible-playbook and probe it. The
// probe runs with the environment a run gets (keptEnv, then the
// virtualenv's VIRTUAL_ENV and PATH), where it runs (kubespray's root: its
// ansible.cfg decides where collections are), and with no configuration
// file for heatsible's own (the bundle's sets nothing the probe reads).
var probeFuncs = `hs_timeout=
if command -v timeout >/dev/null 2>&1; then hs_timeout="timeout ` + fmt.Sprint(probeTimeout) + `"; fi
hs_resolve() {
  s=$1; shift
  case $s in
  '')
    for c in "$@"; do if [ -f "$c" ] && [ -x "$c" ]; then printf '%s\n' "$c"; return 0; fi; done
    command -v ansible-playbook ;;
  */*) if [ -d "$s" ]; then printf '%s\n' "${s%/}/bin/ansible-playbook"; else printf '%s\n' "$s"; fi ;;
  *) command -v -- "$s" ;;
  esac
}
hs_probe() {
  f=$1 dir=$2 ap=$3 want=$4
  if [ -z "$ap" ] || [ ! -f "$ap" ] || [ ! -x "$ap" ]; then
    printf 'ansible %s {"error":"not found","path":"%s"}\n' "$f" "$(printf '%s' "$ap" | tr -d '"\\')"; return 0
  fi
  case $ap in /*) ;; *) ap=$(cd "$(dirname -- "$ap")" && pwd)/${ap##*/} ;; esac
  py= line=
  IFS= read -r line < "$ap" || true
  case $line in
  '#!'*)
    set -- ${line#??}
    if [ "${1##*/}" = env ]; then py=$(command -v -- "${2:-}"); else py=${1:-}; fi ;;
  esac
  case ${py##*/} in
  python*) ;;
  *) py=$($hs_timeout "$ap" --version 2>/dev/null </dev/null | sed -n 's/^ *python version = .*(\(\/[^()]*\))$/\1/p' | sed -n 1p) ;;
  esac
  venv= d=${ap%/*}; d=${d%/*}
  if [ -f "$d/pyvenv.cfg" ]; then venv=$d; fi
  if [ -z "$py" ] || [ ! -x "$py" ]; then
    printf 'ansible %s {"error":"%s: cannot tell which Python it runs with"}\n' "$f" "$(printf '%s' "$ap" | tr -d '"\\')"; return 0
  fi
  (
    ` + keepEnvScript + `
    if [ -n "$venv" ]; then set -- "$@" "VIRTUAL_ENV=$venv" "PATH=$venv/bin:${PATH:-/usr/bin:/bin}"; fi
    if [ -n "$dir" ]; then cd "$dir" || exit 0; else cd / && set -- "$@" ANSIBLE_CONFIG=/dev/null; fi
    exec $hs_timeout env -i "$@" "$py" -c "$HS_PROBE_PY" "$f" "$ap" "$venv" "$want" 2>/dev/null </dev/null
  ) || printf 'ansible %s {"error":"%s: the probe failed"}\n' "$f" "$(printf '%s' "$ap" | tr -d '"\\')"
}
`

// probeScript prints one "ansible FOR {json}" line per want, in order
// (the probes run at once).
func probeScript(wants []AnsibleWant) (string, error) {
	if len(wants) == 0 {
		return "", nil
	}
	var sb strings.Builder
	sb.WriteString("HS_PROBE_PY=" + remote.ShellQuote(probePy) + "\n")
	sb.WriteString(probeFuncs)
	sb.WriteString("hs_tmp=$(mktemp -d) || exit 1\n")
	for i, w := range wants {
		if w.For != ForRoles && w.For != ForKubespray {
			return "", fmt.Errorf("probing Ansible: unknown purpose %q", w.For)
		}
		want, err := json.Marshal(map[string]any{"collections": w.Collections, "bounds": w.BoundsFiles})
		if err != nil {
			return "", err
		}
		args := []string{probeArg(w.Setting)}
		for _, c := range w.Candidates {
			args = append(args, shellExpr(c))
		}
		dir := "''"
		if w.Dir != "" {
			dir = shellExpr(w.Dir)
		}
		fmt.Fprintf(&sb, "( hs_probe %s %s \"$(hs_resolve %s)\" %s > \"$hs_tmp/%d\" ) &\n", w.For, dir, strings.Join(args, " "), remote.ShellQuote(string(want)), i)
	}
	sb.WriteString("wait\n")
	for i := range wants {
		fmt.Fprintf(&sb, "cat \"$hs_tmp/%d\"\n", i)
	}
	sb.WriteString("rm -rf \"$hs_tmp\"\n")
	return sb.String(), nil
}

// probeArg quotes a setting: a path (maybe "~/") for the shell, or a name.
func probeArg(s string) string {
	if strings.Contains(s, "/") {
		return shellExpr(s)
	}
	return remote.ShellQuote(s)
}

// parseProbe reads the "ansible FOR {json}" lines of a probe, in the
// order of wants.
func parseProbe(wants []AnsibleWant, lines []string) ([]AnsibleFound, error) {
	var found []AnsibleFound
	for _, l := range lines {
		rest, ok := strings.CutPrefix(l, "ansible ")
		if !ok {
			continue
		}
		f, js, _ := strings.Cut(rest, " ")
		var af AnsibleFound
		if err := json.Unmarshal([]byte(js), &af); err != nil {
			return nil, fmt.Errorf("probing Ansible: unreadable answer %q", l)
		}
		af.For = f
		found = append(found, af)
	}
	if len(found) != len(wants) {
		return nil, fmt.Errorf("probing Ansible: %d answer(s) for %d ansible-playbook(s)", len(found), len(wants))
	}
	for i := range wants {
		if found[i].For != wants[i].For {
			return nil, fmt.Errorf("probing Ansible: answer %d is for %q, want %q", i, found[i].For, wants[i].For)
		}
	}
	return found, nil
}

// Probe finds the ansible-playbooks of wants on this machine (--local):
// what the lock session finds on the Ansible host (RemoteLock.Ansibles).
func (LocalRunner) Probe(ctx context.Context, wants []AnsibleWant) ([]AnsibleFound, error) {
	script, err := probeScript(wants)
	if err != nil || script == "" {
		return nil, err
	}
	cmd := osexec.CommandContext(ctx, "/bin/sh", "-c", script)
	cmd.Dir = "/"
	cmd.Env = os.Environ()
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("probing Ansible on this machine: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return parseProbe(wants, strings.Split(out.String(), "\n"))
}
