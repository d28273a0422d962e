package e2e

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// staging lists heatsible's staging directories on the Ansible host, each
// with its secrets file's mode and owner ("DIR 600 ubuntu"; "DIR -" when
// it has none).
func (b *bed) staging(t *testing.T) []string {
	t.Helper()
	out := b.exec(t, "ansible", "sh", "-c", `for d in ~`+b.env["BED_USER"]+`/.heatsible/runs/heatsible-*; do
  [ -d "$d" ] || continue
  if [ -f "$d/secrets.yml" ]; then echo "$d $(stat -c '%a %U' "$d/secrets.yml")"; else echo "$d -"; fi
done`)
	return strings.Fields(strings.ReplaceAll(strings.TrimSpace(out), " ", "|"))
}

var sshdPid = regexp.MustCompile(`pid=(\d+)`)

// TestAnsibleHostConnectionCut: the SSH connection from heatsible to the
// Ansible host dies mid-run (the sshd processes serving it are killed, as
// when the Ansible host's sshd is restarted hard or the session is reaped).
// heatsible exits 3 saying the connection was lost; the Ansible host stops
// the orphaned ansible-playbook and removes the staging directory with its
// 0600 secrets file by itself; the next run works.
func TestAnsibleHostConnectionCut(t *testing.T) {
	b := needBed(t)
	// Left by earlier runs whose Ansible host went away (or by a heatsible
	// without the watchdog): the next run removes them too.
	left := b.staging(t)
	r := b.start(t, "", b.runArgs()...)
	// Mid-run: the storage server's NFS role is under way.
	r.waitFor(t, "nfs_server : ", 3*time.Minute)
	var staged []string
	for _, d := range b.staging(t) {
		if !slices.Contains(left, d) {
			staged = append(staged, d)
		}
	}
	if len(staged) != 1 || !strings.HasSuffix(staged[0], "|600|"+b.env["BED_USER"]) {
		t.Fatalf("staging on the Ansible host during the run: %v, want one directory with a 0600 secrets.yml owned by %s", staged, b.env["BED_USER"])
	}
	dir := strings.Split(staged[0], "|")[0]

	// The sshd processes (privileged monitor and session) serving this
	// machine's connection; nothing else logs in to the Ansible host.
	ss := b.exec(t, "ansible", "ss", "-Htnp", "state", "established", "( sport = :22 and dst 10.231.0.1 )")
	var pids []string
	for _, m := range sshdPid.FindAllStringSubmatch(ss, -1) {
		pids = append(pids, m[1])
	}
	if len(pids) == 0 {
		t.Fatalf("no sshd serves heatsible on the Ansible host:\n%s", ss)
	}
	// Killing the monitor ends its session process too, and either may be
	// gone before the other's kill: only "none of them was there" is an
	// error (kill's exit 1 for one missing process is not).
	if n := b.killOn(t, "ansible", pids...); n == 0 {
		t.Fatalf("none of the sshd processes %v serving heatsible was there to kill", pids)
	}
	cut := time.Now()

	code, _, errs, _ := r.wait(t, 2*time.Minute)
	t.Logf("connection cut: heatsible exited %d %s after the cut\n%s", code, time.Since(cut).Round(time.Millisecond), errorOf(errs))
	if code != 3 {
		t.Fatalf("exit %d, want 3 (a host could not be reached)\n%s", code, tail(errs, 30))
	}
	if !strings.Contains(errs, "lost the connection to the Ansible host 10.231.0.10:22 while ansible-playbook ran") {
		t.Errorf("the error does not say the connection to the Ansible host was lost:\n%s", tail(errs, 10))
	}

	// Removed now, by the Ansible host, without a next run.
	eventually(t, 45*time.Second, func() string {
		out, _ := b.try("ansible", "sh", "-c", "ls -d "+dir+" 2>/dev/null; pgrep -a -f '[a]nsible-playbook'")
		if s := strings.TrimSpace(out); s != "" {
			return "still on the Ansible host: " + s
		}
		return ""
	})
	t.Logf("staging directory and ansible-playbook gone %s after the cut", time.Since(cut).Round(time.Millisecond))
	code, out, errs, took := b.heatsible(t, b.runArgs()...)
	t.Logf("next run: exit %d in %s", code, took.Round(time.Millisecond))
	if code != 0 {
		t.Fatalf("the run after the cut failed (exit %d):\n%s", code, tail(errs, 40))
	}
	if now := b.staging(t); len(now) != 0 {
		t.Errorf("staging directories on the Ansible host after the next run: %v (there before: %v)", now, left)
	}
	parseRun(t, out)
	checkPVs(t, b, len(b.request(t).AdditionalParams.K.PVs), "Available")
}
