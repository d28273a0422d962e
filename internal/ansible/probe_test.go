package ansible

import (
	"context"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// fakeAnsible makes a virtualenv-shaped directory whose bin/ansible-playbook
// runs with a python3 that imports a fake ansible package of version v
// (ansible/release.py only) and, if colls, sees fake ansible.posix and
// community.general collections with the modules heatsible's roles use.
func fakeAnsible(t *testing.T, v string, colls bool) string {
	t.Helper()
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	d := t.TempDir()
	site := filepath.Join(d, "site")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string, mode os.FileMode) {
		t.Helper()
		must(os.MkdirAll(filepath.Dir(p), 0o755))
		must(os.WriteFile(p, []byte(s), mode))
	}
	write(filepath.Join(site, "ansible", "__init__.py"), "", 0o644)
	write(filepath.Join(site, "ansible", "release.py"), "__version__ = '"+v+"'\n", 0o644)
	write(filepath.Join(site, "ansible", "constants.py"), "COLLECTIONS_PATHS = []\nCOLLECTIONS_SCAN_SYS_PATH = True\n", 0o644)
	if colls {
		for name, mods := range RoleCollections {
			ns, c, _ := strings.Cut(name, ".")
			cd := filepath.Join(site, "ansible_collections", ns, c)
			write(filepath.Join(cd, "MANIFEST.json"), `{"collection_info": {"version": "9.8.7"}}`, 0o644)
			for _, m := range mods {
				write(filepath.Join(cd, "plugins", "modules", m+".py"), "", 0o644)
			}
		}
	}
	write(filepath.Join(d, "venv", "pyvenv.cfg"), "home = /usr/bin\n", 0o644)
	write(filepath.Join(d, "venv", "bin", "python3"), "#!/bin/sh\nPYTHONPATH="+site+" exec /usr/bin/python3 -S \"$@\"\n", 0o755)
	write(filepath.Join(d, "venv", "bin", "ansible-playbook"), "#!"+filepath.Join(d, "venv", "bin", "python3")+"\n", 0o755)
	return filepath.Join(d, "venv")
}

func probeOne(t *testing.T, w AnsibleWant) AnsibleFound {
	t.Helper()
	found, err := LocalRunner{}.Probe(context.Background(), []AnsibleWant{w})
	if err != nil {
		t.Fatal(err)
	}
	return found[0]
}

// TestProbeAndCheck: the probe finds the ansible-playbook a setting names
// (a virtualenv, its ansible-playbook, kubespray's candidates), its version,
// virtualenv and collections, and CheckAnsible refuses what heatsible does
// not support, naming what it found, the range and how to get one.
func TestProbeAndCheck(t *testing.T) {
	ok := fakeAnsible(t, "2.18.19", true)
	old := fakeAnsible(t, "2.12.10", true)
	newer := fakeAnsible(t, "2.20.0", true)
	bare := fakeAnsible(t, "2.19.14", false)
	roles := func(setting string) AnsibleWant {
		return AnsibleWant{For: ForRoles, Setting: setting, Collections: RoleCollections}
	}
	for _, tc := range []struct {
		name    string
		want    AnsibleWant
		version string
		venv    string
		refuse  []string // "" : accepted
	}{
		{name: "a virtualenv", want: roles(ok), version: "2.18.19", venv: ok},
		{name: "its ansible-playbook", want: roles(ok + "/bin/ansible-playbook"), version: "2.18.19", venv: ok},
		{name: "too old", want: roles(old), version: "2.12.10", venv: old,
			refuse: []string{old + "/bin/ansible-playbook, which is ansible-core 2.12.10; heatsible supports ansible-core 2.14 to 2.19", "pip install 'ansible>=7,<13'", `ansible.ansible_playbook "` + old + `"`}},
		{name: "too new", want: roles(newer), version: "2.20.0", venv: newer,
			refuse: []string{"ansible-core 2.20.0; heatsible supports ansible-core 2.14 to 2.19"}},
		{name: "a bare ansible-core", want: roles(bare), version: "2.19.14", venv: bare,
			refuse: []string{"(ansible-core 2.19.14) has no ansible.posix, no community.general; heatsible's roles use ansible.posix.mount and community.general.filesystem", "ansible-galaxy collection install ansible.posix community.general"}},
		{name: "no such file", want: roles("/nonexistent/ansible-playbook"), refuse: []string{`ansible.ansible_playbook "/nonexistent/ansible-playbook": no ansible-playbook to run heatsible's roles with: /nonexistent/ansible-playbook is not there`}},
		{name: "kubespray's needs no collection", want: AnsibleWant{For: ForKubespray, Setting: bare}, version: "2.19.14", venv: bare},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := probeOne(t, tc.want)
			if f.Version != tc.version || f.Venv != tc.venv {
				t.Errorf("found %+v, want version %q, venv %q", f, tc.version, tc.venv)
			}
			err := CheckAnsible(tc.want, f, "here")
			if len(tc.refuse) == 0 {
				if err != nil {
					t.Errorf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrAnsibleUnsupported) {
				t.Fatalf("CheckAnsible = %v, want ErrAnsibleUnsupported", err)
			}
			for _, s := range tc.refuse {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("the refusal does not say %q:\n%v", s, err)
				}
			}
		})
	}
}

// TestProbeKubespray: unset, kubespray's ansible-playbook is the first
// candidate that exists (kubespray's virtualenv), else ansible-playbook in
// PATH; kubespray's own bounds (ansible_version.yml) are read and enforced.
func TestProbeKubespray(t *testing.T) {
	v218 := fakeAnsible(t, "2.18.19", false)
	v214 := fakeAnsible(t, "2.14.18", false)
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "playbooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	// kubespray main's, as it is
	bounds := "---\n- name: Check Ansible version\n  vars:\n    minimal_ansible_version: 2.18.0\n    maximal_ansible_version: 2.19.0\n"
	if err := os.WriteFile(filepath.Join(root, "playbooks", "ansible_version.yml"), []byte(bounds), 0o644); err != nil {
		t.Fatal(err)
	}
	w := AnsibleWant{For: ForKubespray, Dir: root,
		Candidates:  []string{root + "/venv/bin/ansible-playbook", root + "/.venv/bin/ansible-playbook"},
		BoundsFiles: []string{root + "/playbooks/ansible_version.yml", root + "/ansible_version.yml"}}

	if err := os.Symlink(v218, filepath.Join(root, ".venv")); err != nil {
		t.Fatal(err)
	}
	f := probeOne(t, w)
	if f.Path != root+"/.venv/bin/ansible-playbook" || f.Version != "2.18.19" || f.Bounds == nil || f.Bounds.Min != "2.18.0" || f.Bounds.Max != "2.19.0" {
		t.Fatalf("found %+v (bounds %+v), want root's .venv 2.18.19 with bounds 2.18.0..2.19.0", f, f.Bounds)
	}
	if err := CheckAnsible(w, f, "here"); err != nil {
		t.Errorf("refused: %v", err)
	}
	if s := f.Summary(); !strings.Contains(s, "ansible-core 2.18.19") || !strings.Contains(s, "kubespray's ansible_version.yml wants 2.18.0 <= version < 2.19.0") {
		t.Errorf("summary %q", s)
	}

	// a 2.14 virtualenv first: outside kubespray's bounds
	if err := os.Symlink(v214, filepath.Join(root, "venv")); err != nil {
		t.Fatal(err)
	}
	f = probeOne(t, w)
	err := CheckAnsible(w, f, "here")
	if f.Version != "2.14.18" || !errors.Is(err, ErrAnsibleUnsupported) || !strings.Contains(err.Error(), "ansible-core 2.14.18, but this kubespray's "+root+"/playbooks/ansible_version.yml wants 2.18.0 <= version < 2.19.0") {
		t.Errorf("found %+v; CheckAnsible = %v", f, err)
	}

	// no candidate: ansible-playbook in PATH (this machine's)
	for _, d := range []string{"venv", ".venv"} {
		if err := os.Remove(filepath.Join(root, d)); err != nil {
			t.Fatal(err)
		}
	}
	f = probeOne(t, w)
	if p, err := lookPath("ansible-playbook"); err != nil {
		if f.Error != "not found" {
			t.Errorf("no ansible-playbook in PATH: found %+v", f)
		}
	} else if f.Path != p {
		t.Errorf("found %+v, want %s from PATH", f, p)
	}
}

// TestCheckSSHPass: with passwords for the nodes, an Ansible before 2.19
// without sshpass in its PATH is refused, saying how to get it; without
// passwords, or from 2.19 on (SSH_ASKPASS), it is not.
func TestCheckSSHPass(t *testing.T) {
	f := AnsibleFound{For: ForRoles, Path: "/x/bin/ansible-playbook", Version: "2.18.19",
		Collections: map[string]CollectionFound{"ansible.posix": {Path: "p"}, "community.general": {Path: "g"}}}
	w := AnsibleWant{For: ForRoles, Collections: RoleCollections, SSHPass: true}
	err := CheckAnsible(w, f, "here")
	if !errors.Is(err, ErrAnsibleUnsupported) || !strings.Contains(err.Error(), "no sshpass in the PATH /x/bin/ansible-playbook runs with") || !strings.Contains(err.Error(), "apt install sshpass") {
		t.Errorf("CheckAnsible without sshpass = %v", err)
	}
	f.SSHPass = true
	if err := CheckAnsible(w, f, "here"); err != nil {
		t.Errorf("with sshpass: %v", err)
	}
	f.SSHPass, f.Version = false, "2.19.14"
	if err := CheckAnsible(w, f, "here"); err != nil {
		t.Errorf("2.19 without sshpass: %v", err)
	}
	f.Version, w.SSHPass = "2.18.19", false
	if err := CheckAnsible(w, f, "here"); err != nil {
		t.Errorf("no passwords: %v", err)
	}
	if _, err := exec.LookPath("sshpass"); err == nil {
		if got := probeOne(t, AnsibleWant{For: ForKubespray, Setting: fakeAnsible(t, "2.18.19", false)}); !got.SSHPass {
			t.Errorf("sshpass is in PATH here, the probe says %+v", got)
		}
	}
}

func TestVersionLess(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		less bool
	}{
		{"2.14.18", "2.14", false}, {"2.13.9", "2.14", true}, {"2.19.14", "2.20", true}, {"2.20.0", "2.20", false},
		{"2.19.0rc1", "2.19.0", false}, {"2.9.20", "2.10", true}, {"2.10.17", "2.9", false},
	} {
		if got := versionLess(tc.a, tc.b); got != tc.less {
			t.Errorf("versionLess(%s, %s) = %v", tc.a, tc.b, got)
		}
	}
}

func lookPath(name string) (string, error) { return exec.LookPath(name) }

// TestProbeRealAnsibles probes the Ansibles real Ansible hosts have:
// Debian's (/usr/bin/ansible-playbook, when installed) and the virtualenvs
// testbed/ansible/venvs.sh built (when it did), and checks what heatsible
// says of each.
func TestProbeRealAnsibles(t *testing.T) {
	cache := os.Getenv("HEATSIBLE_CACHE")
	if cache == "" {
		cache = "/var/cache/heatsible"
	}
	for _, tc := range []struct {
		name, setting, version, refuse string
		kubespray                      bool
	}{
		{name: "Debian 12", setting: "/usr/bin/ansible-playbook", version: "2.14."},
		{name: "core-2.14", version: "2.14."},
		{name: "core-2.15", version: "2.15."},
		{name: "mitogen-2.14", version: "2.14."},
		{name: "core-2.16", version: "2.16."},
		{name: "core-2.17", version: "2.17."},
		{name: "core-2.18", version: "2.18."},
		{name: "core-2.19", version: "2.19."},
		{name: "ansible-11.13.0", version: "2.18."},
		{name: "core-2.19-bare", version: "2.19.", refuse: "has no ansible.posix, no community.general"},
		{name: "core-2.19-bare", version: "2.19.", kubespray: true},
		{name: "kubespray-2.16", version: "2.9.20", refuse: "which is ansible 2.9.20; heatsible supports ansible-core 2.14 to 2.19"},
		{name: "kubespray-2.16", version: "2.9.20", kubespray: true},
		{name: "kubespray-2.27", version: "2.16.", kubespray: true},
		{name: "kubespray-2.29", version: "2.17.", kubespray: true},
	} {
		setting := tc.setting
		if setting == "" {
			setting = filepath.Join(cache, "ansible", tc.name)
			if _, err := os.Stat(filepath.Join(setting, ".heatsible-venv")); err != nil {
				t.Logf("%s: not built (testbed/ansible/venvs.sh build %s)", tc.name, tc.name)
				continue
			}
		} else if _, err := os.Stat(setting); err != nil {
			t.Logf("%s: no %s", tc.name, setting)
			continue
		}
		w := AnsibleWant{For: ForRoles, Setting: setting, Collections: RoleCollections}
		if tc.kubespray {
			w = AnsibleWant{For: ForKubespray, Setting: setting}
		}
		f := probeOne(t, w)
		err := CheckAnsible(w, f, "here")
		t.Logf("%s for %s: %s: %v", tc.name, w.For, f.Summary(), err)
		if !strings.HasPrefix(f.Version, tc.version) {
			t.Errorf("%s: version %q, want %s*", tc.name, f.Version, tc.version)
		}
		switch {
		case tc.refuse == "" && err != nil:
			t.Errorf("%s for %s: refused: %v", tc.name, w.For, err)
		case tc.refuse != "" && (err == nil || !strings.Contains(err.Error(), tc.refuse)):
			t.Errorf("%s for %s: CheckAnsible = %v, want a refusal saying %q", tc.name, w.For, err, tc.refuse)
		}
	}
}

// TestRoleCollectionsAreWhatTheRolesUse: RoleCollections (what the probe
// asks of the Ansible host) lists exactly the modules outside
// ansible.builtin that the roles' tasks and handlers call, but for those of
// heatsible.nfv, which every run bundle carries (package collection).
func TestRoleCollectionsAreWhatTheRolesUse(t *testing.T) {
	files, err := filepath.Glob("../../roles/*/*/*.yml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no role files: %v", err)
	}
	used := map[string]bool{}
	re := regexp.MustCompile(`(?m)^\s*(?:-\s+)?([a-z_]+\.[a-z_]+)\.([a-z_0-9]+):`)
	for _, f := range files {
		if d := filepath.Base(filepath.Dir(f)); d != "tasks" && d != "handlers" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			if m[1] != "ansible.builtin" && m[1] != "heatsible.nfv" {
				used[m[1]+"."+m[2]] = true
			}
		}
	}
	listed := map[string]bool{}
	for c, mods := range RoleCollections {
		for _, m := range mods {
			listed[c+"."+m] = true
		}
	}
	if !maps.Equal(used, listed) {
		t.Errorf("the roles use %v; RoleCollections lists %v", slices.Sorted(maps.Keys(used)), slices.Sorted(maps.Keys(listed)))
	}
}
