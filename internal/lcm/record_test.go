package lcm

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heatsible/heatsible/internal/ansible"
	"github.com/heatsible/heatsible/internal/fail"
	"github.com/heatsible/heatsible/internal/params"
	"github.com/heatsible/heatsible/internal/redact"
	"github.com/heatsible/heatsible/internal/report"
	"github.com/heatsible/heatsible/internal/state"
)

// requestSecretValues are every secret of testdata/requests/valid.json.
var requestSecretValues = []string{"test-password-m", "test-password-w", "test-password-s", "password1", "password2", "user1:password1"}

// checkRecord checks the record's modes (0700 directories, 0600 files) and
// that no file holds a secret; it returns the record's files by path.
func checkRecord(t *testing.T, dir string, secrets []string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			if info.Mode().Perm() != 0o700 {
				t.Errorf("%s: mode %v, want 0700", rel, info.Mode().Perm())
			}
			return nil
		}
		if info.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", rel, info.Mode().Perm())
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, s := range secrets {
			if strings.Contains(string(b), s) {
				t.Errorf("%s holds the secret %q", rel, s)
			}
		}
		files[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestRecordWriter drives the record like Run does, with a made-up result
// whose events carry secrets (as an unmasked runner would give them).
func TestRecordWriter(t *testing.T) {
	stateDir := t.TempDir()
	t.Setenv("HEATSIBLE_STATE_DIR", stateDir)
	req, topo := fixture(t, "valid")
	req.Cluster.Ansible = &params.Ansible{IPAddress: "192.0.2.5", Username: "ansible", Password: "ansible-host-pw"}
	f, err := RenderOp(req, topo, "../../testdata/package", Op{Name: OpInstantiateEnd}, "test")
	if err != nil {
		t.Fatal(err)
	}
	o := RunOptions{Operation: OpInstantiateEnd, Request: req, Check: true, Limit: "storage-server"}
	start := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	rec := newRecord(o, slog.New(slog.NewTextHandler(io.Discard, nil)), start)
	var passed []ansible.Event
	on := recordEvents(rec, func(e ansible.Event) { passed = append(passed, e) })
	rec.Open(topo.Cluster)
	recordFiles(rec, f)
	events := []ansible.Event{
		{Kind: ansible.KindPlayStart, Play: "Storage server"},
		{Kind: ansible.KindResult, Play: "Storage server", Task: "nfs_server : Write /etc/exports", Host: "storage-server", Status: ansible.StatusChanged,
			Diff: "+password test-password-s\n"},
		{Kind: ansible.KindResult, Play: "Storage server", Task: "nfs_server : Verify", Host: "storage-server", Status: ansible.StatusFailed,
			Msg: "proxy http://user1:password1@proxy.example.com:3128 and ansible-host-pw"},
	}
	for _, e := range events {
		on(e)
	}
	if len(passed) != len(events) {
		t.Errorf("%d events passed on, want %d", len(passed), len(events))
	}
	res := &ansible.Result{Command: []string{"ansible-playbook", "--check"}, ExitCode: 2, Events: events, Started: start, Finished: start.Add(time.Minute),
		Recap: map[string]ansible.HostRecap{"storage-server": {OK: 1, Changed: 1, Failed: 1}}, RecapComplete: true}
	out := &RunOutcome{Operation: OpInstantiateEnd, Cluster: topo.Cluster, Where: "ansible host 192.0.2.5", Check: true, Result: res}
	runErr := fail.With(fail.HostFailed, &ansible.HostsError{Kind: ansible.ErrHostFailed, Hosts: []string{"storage-server"}, Messages: map[string]string{"storage-server": "test-password-s"}})
	out, err = finishRecord(rec, out, runErr)

	dir := filepath.Join(stateDir, state.RunsDir, "k8s-a", "20261122T090000Z-instantiate-end")
	if out.Record != dir {
		t.Errorf("RunOutcome.Record = %q, want %q", out.Record, dir)
	}
	if !strings.HasSuffix(err.Error(), "(log: "+filepath.Join(dir, state.RunLog)+")") || fail.Code(err) != fail.HostFailed || !errors.Is(err, ansible.ErrHostFailed) {
		t.Errorf("error %q (code %d): want the log path at the end and exit code 4", err, fail.Code(err))
	}
	if state.LogPath(err) != filepath.Join(dir, state.RunLog) {
		t.Errorf("LogPath = %q", state.LogPath(err))
	}
	for _, d := range []string{stateDir + "/" + state.RunsDir, stateDir + "/" + state.RunsDir + "/k8s-a"} {
		if st, err := os.Stat(d); err != nil || st.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v %v, want 0700", d, st.Mode(), err)
		}
	}
	files := checkRecord(t, dir, append(requestSecretValues, "ansible-host-pw"))
	for _, want := range []string{state.RunLog, state.RecordReport, "bundle/inventory/hosts.yml", "bundle/playbook.yml", "bundle/secrets.yml",
		"bundle/inventory/group_vars/all.yml", "bundle/inventory/group_vars/nfs_server.yml", "bundle/manifests/nfs-pv1.yaml"} {
		if _, ok := files[want]; !ok {
			t.Errorf("the record lacks %s (has %v)", want, keys(files))
		}
	}
	if !strings.Contains(files["bundle/secrets.yml"], "storage_password: '"+redact.Masked+"'") &&
		!strings.Contains(files["bundle/secrets.yml"], "storage_password: "+redact.Masked) {
		t.Errorf("masked secrets.yml:\n%s", files["bundle/secrets.yml"])
	}
	if !strings.Contains(files[state.RecordReport], "**1 changes on 1 hosts would be made.**") {
		t.Errorf("report.md:\n%s", files[state.RecordReport])
	}
	// run.log reads back into the same report.
	in, err := report.ReadLog(strings.NewReader(files[state.RunLog]))
	if err != nil {
		t.Fatal(err)
	}
	if in.Cluster != "k8s-a" || !in.Check || in.Limit != "storage-server" || in.Where != "ansible host 192.0.2.5" || in.Result == nil ||
		len(in.Result.Events) != 3 || in.Result.Recap["storage-server"].Failed != 1 || in.Err == nil {
		t.Errorf("run.log read back as %+v", in)
	}
	lines := strings.Split(strings.TrimSpace(files[state.RunLog]), "\n")
	for i, want := range []string{`"kind":"start"`, `"kind":"play_start"`, `"kind":"result"`, `"kind":"result"`, `"kind":"recap"`, `"kind":"error"`, `"kind":"end"`} {
		if i >= len(lines) || !strings.Contains(lines[i], want) {
			t.Errorf("run.log line %d: want %s\n%s", i+1, want, files[state.RunLog])
		}
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestRunLeavesARecord runs the real thing through Run: ansible-playbook
// here (--local) against a cluster whose addresses are closed loopback
// ports, so every host is unreachable, fast. The run fails with exit code 3,
// its error names the log, and the record holds the events, masked.
func TestRunLeavesARecord(t *testing.T) {
	if _, err := exec.LookPath("ansible-playbook"); err != nil {
		t.Skip("ansible-playbook not on PATH")
	}
	tmp := t.TempDir()
	stateDir := filepath.Join(tmp, "stateDir")
	t.Setenv("HEATSIBLE_STATE_DIR", stateDir)
	topo := filepath.Join(tmp, "topo.yaml")
	doc := `cluster: rec-test
stack: rec-test
nodes:
  - {name: master-0, role: master, ssh_address: 127.0.0.2, address: 127.0.0.2}
  - {name: worker-0, role: worker, ssh_address: 127.0.0.3, address: 127.0.0.3}
  - {name: storage-server, role: storage, ssh_address: 127.0.0.4, address: 127.0.0.4}
cps:
  storage_server_CP: 127.0.0.4
  masterNode_CP1: 127.0.0.2
volumes:
  - {resource: storage_server_volume, id: 5b1d3a2c-0000-4000-8000-000000000001, device: /dev/vdb}
`
	if err := os.WriteFile(topo, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	kh := filepath.Join(tmp, "known_hosts")
	if err := os.WriteFile(kh, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	req, _ := fixture(t, "valid")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var seen int
	out, err := Run(ctx, RunOptions{
		Operation: OpInstantiateEnd, Request: req, PackageDir: "../../testdata/package",
		Source: Source{TopologyFile: topo}, Local: true, KnownHosts: kh, Check: true,
		OnEvent: func(ansible.Event) { seen++ }, Stderr: io.Discard,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err == nil || fail.Code(err) != fail.Unreachable {
		t.Fatalf("Run: %v (code %d), want unreachable hosts (3)", err, fail.Code(err))
	}
	if out == nil || out.Record == "" || !strings.HasSuffix(err.Error(), "(log: "+filepath.Join(out.Record, state.RunLog)+")") {
		t.Fatalf("error %q does not end with the record's log (record %v)", err, out)
	}
	if seen == 0 {
		t.Error("no event reached OnEvent")
	}
	files := checkRecord(t, out.Record, requestSecretValues)
	if !strings.Contains(files[state.RunLog], `"status":"unreachable"`) || !strings.Contains(files[state.RunLog], `"kind":"recap"`) {
		t.Errorf("run.log:\n%s", files[state.RunLog])
	}
	if !strings.Contains(files[state.RecordReport], "**unreachable**") {
		t.Errorf("report.md:\n%s", files[state.RecordReport])
	}
	if _, ok := files["bundle/secrets.yml"]; !ok {
		t.Errorf("no bundle in the record: %v", keys(files))
	}
}

// TestEarlyFailureLeavesARecord: a run refused before anything ran (the
// request names a CP the topology lacks) still has a record, under the
// topology file's cluster, and its error names it.
func TestEarlyFailureLeavesARecord(t *testing.T) {
	stateDir := t.TempDir()
	t.Setenv("HEATSIBLE_STATE_DIR", stateDir)
	req, err := params.Load("../../testdata/requests/external_lb.json")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), RunOptions{Operation: OpInstantiateEnd, Request: req, PackageDir: "../../testdata/package",
		Source: Source{TopologyFile: "../../testdata/topology/k8s-a.yaml"}, Local: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if fail.Code(err) != fail.Invalid {
		t.Fatalf("Run: %v, want invalid input", err)
	}
	log := state.LogPath(err)
	if !strings.HasPrefix(log, filepath.Join(stateDir, state.RunsDir, "k8s-a")+"/") || !strings.HasSuffix(err.Error(), "(log: "+log+")") {
		t.Fatalf("error %q: want a log under runs/k8s-a", err)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"kind":"error"`) || !strings.Contains(string(b), `"exit_code":2`) {
		t.Errorf("run.log:\n%s", b)
	}
	checkRecord(t, filepath.Dir(log), []string{"test-password"})
}

// TestRefusedRunsKeepTheKilledRunsRecord: the refusal of a killed run's
// lock tells the operator to read that run's record; a hook retrying the
// refused operation must not push it out of the records kept. Records are
// pruned only by a run that holds the lock.
func TestRefusedRunsKeepTheKilledRunsRecord(t *testing.T) {
	stateDir := t.TempDir()
	t.Setenv("HEATSIBLE_STATE_DIR", stateDir)
	runs := filepath.Join(stateDir, state.RunsDir, "k8s-a")
	killed := filepath.Join(runs, "20261101T090000Z-instantiate-end")
	if err := os.MkdirAll(killed, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(killed, state.RunLog), []byte(`{"kind":"start"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The lock file of a run that was killed: free, holder record left.
	rec := `{"operation":"instantiate-end","pid":4242,"host":"conductor-1","started":"2026-11-01T09:00:00Z"}` + "\n"
	if err := os.WriteFile(filepath.Join(stateDir, "k8s-a.lock"), []byte(rec), 0o600); err != nil {
		t.Fatal(err)
	}
	kh := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(kh, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	req, _ := fixture(t, "valid")
	o := RunOptions{Operation: OpInstantiateEnd, Request: req, PackageDir: "../../testdata/package",
		Source: Source{TopologyFile: "../../testdata/topology/k8s-a.yaml"}, Local: true, KnownHosts: kh,
		Stderr: io.Discard, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for i := range state.RecordsKept + 5 {
		_, err := Run(context.Background(), o)
		if fail.Code(err) != fail.Refused || !strings.Contains(err.Error(), "did not finish") {
			t.Fatalf("attempt %d: %v, want refused (a run that did not finish)", i+1, err)
		}
	}
	if _, err := os.Stat(filepath.Join(killed, state.RunLog)); err != nil {
		t.Fatalf("the killed run's record is gone after %d refused attempts: %v", state.RecordsKept+5, err)
	}
	entries, err := os.ReadDir(runs)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != state.RecordsKept+6 {
		t.Errorf("%d records, want every refused attempt's and the killed run's (%d)", len(entries), state.RecordsKept+6)
	}

	// The run that takes the lock over prunes (before it runs anything:
	// without ansible-playbook on PATH it ends right after).
	o.BreakLock = true
	t.Setenv("PATH", t.TempDir())
	if _, err := Run(context.Background(), o); fail.Code(err) == fail.Refused {
		t.Fatalf("--break-lock: %v", err)
	}
	if entries, _ = os.ReadDir(runs); len(entries) != state.RecordsKept {
		t.Errorf("%d records after a run that held the lock, want %d", len(entries), state.RecordsKept)
	}
}
