package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The Ansible of the bed's Ansible host: Debian 12's ansible-core 2.14 in
// PATH, and the venvs of testbed/ansible/venvs.sh (ansible-core 2.14 to 2.19,
// a bare ansible-core, kubespray releases' pins), bound read-only at
// HEATSIBLE_CACHE/ansible (docs/testbed.md).

// venvPath is the venv name's directory, as the bed binds it into the
// ansible host (and as it is on this machine); the test skips when it was
// not built.
func (b *bed) venvPath(t *testing.T, name string) string {
	t.Helper()
	cache := os.Getenv("HEATSIBLE_CACHE")
	if cache == "" {
		cache = "/var/cache/heatsible"
	}
	d := filepath.Join(cache, "ansible", name)
	if _, err := os.Stat(filepath.Join(d, ".heatsible-venv")); err != nil {
		t.Skipf("the venv %s is not built (testbed/ansible/venvs.sh build %s)", name, name)
	}
	if _, err := b.try("ansible", "test", "-f", d+"/.heatsible-venv"); err != nil {
		t.Fatalf("the ansible host has no %s: bring the bed up with this tree's testbed/bin/bed (it binds the venvs into the host)", d)
	}
	return d
}

// kubesprayRelease makes the kubespray stand-in stand for release, with
// venv ("" for the release's pin, "none" for the Ansible in PATH), until the
// test ends; then it puts back what it found.
func (b *bed) kubesprayRelease(t *testing.T, release, venv string) {
	t.Helper()
	was := strings.Fields(b.bedScript(t, "kubespray"))
	if len(was) != 2 || was[0] == "none" {
		t.Fatalf("bed kubespray: %q: bring the bed up with this tree's testbed/bin/bed (the stand-in stands for a release)", was)
	}
	t.Cleanup(func() { b.bedScript(t, "kubespray", was[0], was[1]) })
	args := []string{"kubespray", release}
	if venv != "" {
		args = append(args, venv)
	}
	b.bedScript(t, args...)
}

// keepFile puts path on host back as it is now (or absent) when the test
// ends: its content, owner and mode, its directory made again (with the
// file's owner) if the test removed it, as terminate-end removes the
// kubespray inventory's. A host that cannot be read fails the test before
// it changes anything (it is not taken for a missing file).
func (b *bed) keepFile(t *testing.T, host, path string) {
	t.Helper()
	was := b.exec(t, host, "sh", "-c", `if [ -f "$1" ]; then stat -c '%u:%g %a' "$1" && base64 -w0 "$1"; else echo absent; fi`, "sh", path)
	meta, data, _ := strings.Cut(was, "\n")
	t.Cleanup(func() {
		if meta == "absent" {
			b.exec(t, host, "rm", "-f", path)
			return
		}
		owner, mode, _ := strings.Cut(meta, " ")
		b.exec(t, host, "sh", "-c", `set -e
d=$(dirname "$1")
[ -d "$d" ] || install -d -o "${3%:*}" -g "${3#*:}" "$d"
printf '%s' "$2" | base64 -d > "$1"
chown "$3" "$1"
chmod "$4" "$1"`, "sh", path, strings.TrimSpace(data), owner, mode)
	})
}

// ksAnsibleVersion is the Ansible version the stand-in's newest record of
// playbook (after seq) ran with.
func (b *bed) ksAnsibleVersion(t *testing.T, after int, playbook string) string {
	t.Helper()
	v := ""
	for _, r := range standInRecords[ksVersionRecord](t, b, "ansible", b.env["BED_KUBESPRAY_ROOT"]+"/records", after) {
		if r.Playbook == playbook {
			v = r.Version
		}
	}
	return v
}

type ksVersionRecord struct {
	Seq      int    `json:"seq"`
	Playbook string `json:"playbook"`
	Version  string `json:"ansible_version"`
}

func (r ksVersionRecord) seq() int { return r.Seq }

// rolesAnsible is how a run names the ansible-playbook that runs heatsible's
// roles on the bed, up to its minor version: the venv of BED_ANSIBLE (which
// the bed's requests name), or Debian 12's.
func (b *bed) rolesAnsible(t *testing.T) string {
	t.Helper()
	v := b.env["BED_ANSIBLE"]
	if v == "" {
		return "/usr/bin/ansible-playbook (ansible-core 2.14."
	}
	want := b.venvPath(t, v) + "/bin/ansible-playbook (ansible-core "
	if m := regexp.MustCompile(`^core-(2\.[0-9]+)`).FindStringSubmatch(v); m != nil {
		want += m[1] + "."
	}
	return want
}

// TestAnsibleInUse: heatsible's roles run with the ansible-playbook the
// request names (the bed's BED_ANSIBLE, ansible.ansible_playbook: the
// matrix of testbed/ansible/matrix.sh runs the suite under each), and the
// run says which one and its version.
func TestAnsibleInUse(t *testing.T) {
	b := needBed(t)
	code, _, errs, _ := b.heatsible(t, b.runArgs()...)
	if code != 0 {
		t.Fatalf("instantiate-end: exit %d\n%s", code, tail(errs, 30))
	}
	line := "heatsible: the Ansible host 10.231.0.10: heatsible's roles run with " + b.rolesAnsible(t)
	if !strings.Contains(errs, line) {
		t.Errorf("the run does not say %q:\n%s", line, tail(errs, 40))
	}
}

// TestAnsibleRefused: an ansible-playbook heatsible's roles cannot run with
// (a bare ansible-core without the collections they use; kubespray 2.16's
// Ansible 2.9) and a kubespray Ansible outside that kubespray's own bounds
// are refused with exit code 2 before anything changes, naming what was
// found and how to get a supported one; and the kubespray stand-in's own
// check (kubespray's ansible_version.yml, verbatim) fails a run with the
// wrong Ansible as kubespray does.
func TestAnsibleRefused(t *testing.T) {
	b := needBed(t)
	bare, old := b.venvPath(t, "core-2.19-bare"), b.venvPath(t, "kubespray-2.16")
	home := "/home/" + b.env["BED_USER"]
	staging := func() string {
		out, _ := b.try("ansible", "sh", "-c", "ls -d "+home+"/.heatsible/runs/* 2>/dev/null; true")
		return strings.TrimSpace(out)
	}
	before := staging()
	for _, tc := range []struct {
		name, flag string
		want       []string
	}{
		{"a bare ansible-core", bare, []string{bare + "/bin/ansible-playbook (ansible-core 2.19.14) has no ansible.posix, no community.general; heatsible's roles use ansible.posix.mount and community.general.filesystem",
			"ansible-galaxy collection install ansible.posix community.general"}},
		{"Ansible 2.9", old, []string{"runs heatsible's roles with " + old + "/bin/ansible-playbook, which is ansible 2.9.20; heatsible supports ansible-core 2.14 to 2.19",
			"pip install 'ansible>=7,<13'"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs, _ := b.heatsible(t, b.runArgs("--ansible-playbook", tc.flag)...)
			if code != 2 {
				t.Fatalf("exit %d, want 2\n%s", code, tail(errs, 20))
			}
			for _, w := range append(tc.want, "the Ansible host 10.231.0.10: ") {
				if !strings.Contains(out+errs, w) {
					t.Errorf("the refusal does not say %q:\n%s%s", w, out, tail(errs, 20))
				}
			}
			if strings.Contains(out+errs, `"recap"`) {
				t.Errorf("a playbook ran:\n%s", tail(out+errs, 20))
			}
		})
	}
	if after := staging(); after != before {
		t.Errorf("staging directories on the Ansible host: %q before, %q after", before, after)
	}

	// kubespray main wants ansible-core 2.18: without its venv, kubespray
	// would run with Debian's 2.14 in PATH.
	t.Run("kubespray outside its bounds", func(t *testing.T) {
		b.keepFile(t, "ansible", b.env["BED_KUBESPRAY_ROOT"]+"/inventory/heatsible/hosts.yaml")
		b.kubesprayRelease(t, "main", "none")
		inv := b.env["BED_KUBESPRAY_ROOT"] + "/inventory/heatsible/hosts.yaml"
		invBefore, _ := b.try("ansible", "sh", "-c", "md5sum "+inv+" 2>&1")
		seq := lastRecordSeq(b.ksRecords(t, 0))
		args := []string{"-o", "json", "-v", "run", "instantiate-end",
			"--request", filepath.Join(b.dir, "request-kubespray.json"), "--package", filepath.Join(b.dir, "package"),
			"--stack", b.env["HEATSIBLE_STACK"], "--known-hosts", filepath.Join(b.dir, "known_hosts")}
		code, out, errs, _ := b.heatsible(t, args...)
		want := "runs kubespray with /usr/bin/ansible-playbook, which is ansible-core 2.14.18, but this kubespray's " +
			b.env["BED_KUBESPRAY_ROOT"] + "/playbooks/ansible_version.yml wants 2.18.0 <= version < 2.19.0"
		if code != 2 || !strings.Contains(out+errs, want) {
			t.Fatalf("exit %d, want 2 saying %q\n%s%s", code, want, out, tail(errs, 20))
		}
		if recs := b.ksRecords(t, seq); len(recs) != 0 {
			t.Errorf("the stand-in ran: %s", playbooksOf(recs))
		}
		if after, _ := b.try("ansible", "sh", "-c", "md5sum "+inv+" 2>&1"); after != invBefore {
			t.Errorf("the kubespray inventory changed: %q -> %q", invBefore, after)
		}

		// The stand-in's own check, as kubespray's: run directly with the
		// wrong Ansible, facts.yml stops at kubespray's assert.
		out, err := b.try("ansible", "su", "-", b.env["BED_USER"], "-c",
			"cd "+b.env["BED_KUBESPRAY_ROOT"]+" && ansible-playbook -i localhost, -c local facts.yml 2>&1")
		if err == nil || !strings.Contains(out, "Ansible must be between 2.18.0 and 2.19.0 exclusive - you have 2.14.18") {
			t.Errorf("the stand-in's facts.yml with ansible-core 2.14.18 under kubespray main: %v, want kubespray's refusal\n%s", err, out)
		}
	})
}

// TestKubesprayAnsibleSplit: heatsible's roles and kubespray run with
// different Ansibles in one operation: kubespray with its release's venv,
// found under kubespray_root_path (venv/) when nothing says otherwise, the
// roles with the Ansible host's ansible-playbook in PATH. The stand-in
// checks its release's bounds (ansible_version.yml) and records the version
// it ran with; heatsible reads every playbook's events, kubespray 2.16's
// Ansible 2.9 included. The roles' Ansible is BED_ANSIBLE's when the bed has
// one (make matrix), Debian 12's 2.14 otherwise.
func TestKubesprayAnsibleSplit(t *testing.T) {
	b := needBed(t)
	for _, tc := range []struct{ release, venv, version string }{
		{"main", "ansible-11.13.0", "2.18."},
		{"v2.29.0", "kubespray-2.29", "2.17."},
		{"v2.27.0", "kubespray-2.27", "2.16."},
		{"v2.16.0", "kubespray-2.16", "2.9.20"},
	} {
		t.Run(tc.release, func(t *testing.T) {
			b.venvPath(t, tc.venv)
			b.keepFile(t, "ansible", b.env["BED_KUBESPRAY_ROOT"]+"/inventory/heatsible/hosts.yaml")
			b.kubesprayRelease(t, tc.release, "")
			seq := lastRecordSeq(b.ksRecords(t, 0))
			r, errs := b.ksRun(t, t.TempDir(), "instantiate-end")
			if r.ExitCode != 0 || len(r.Recap) == 0 {
				t.Fatalf("instantiate-end: exit %d, recap %v", r.ExitCode, r.Recap)
			}
			ks := b.env["BED_KUBESPRAY_ROOT"] + "/venv/bin/ansible-playbook ("
			for _, w := range []string{
				"heatsible's roles run with " + b.rolesAnsible(t),
				"kubespray runs with " + ks,
				", virtualenv " + b.env["BED_KUBESPRAY_ROOT"] + "/venv",
			} {
				if !strings.Contains(errs, w) {
					t.Errorf("the run does not say %q:\n%s", w, tail(errs, 40))
				}
			}
			if v := b.ksAnsibleVersion(t, seq, "cluster.yml"); !strings.HasPrefix(v, tc.version) {
				t.Errorf("the stand-in's cluster.yml ran with Ansible %q, want %s*", v, tc.version)
			}
		})
	}
}
