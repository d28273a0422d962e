package e2e

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// fingerprint is what must not move in a dry run: the storage server's
// exports, fstab, ganesha config and mount table, and the PV list.
func (b *bed) fingerprint(t *testing.T) string {
	t.Helper()
	sums := b.exec(t, "storage", "sh", "-c",
		"sha256sum /etc/exports /etc/fstab /etc/ganesha/ganesha.conf 2>&1; findmnt -rn -o TARGET,SOURCE,FSTYPE | sort | sha256sum")
	pvs := b.kubectl(t, "get", "pv", "-o", "jsonpath={range .items[*]}{.metadata.name} {.metadata.resourceVersion} {.status.phase}{\"\\n\"}{end}")
	return sums + pvs
}

// TestCheckChangesNothing: a dry run of a request that would change things
// (a new export, a new PV) reports those changes and changes nothing.
func TestCheckChangesNothing(t *testing.T) {
	b := needBed(t)
	if code, _, errs, _ := b.heatsible(t, b.runArgs()...); code != 0 {
		t.Fatalf("instantiate-end before the dry run: exit %d\n%s", code, tail(errs, 30))
	}
	// A dry run of the converged cluster: nothing would change, and the
	// NFS verification, read-only, runs for real (it once failed here:
	// wait_for skips itself in check mode).
	code, out, errs, took := b.heatsible(t, append(b.runArgs(), "--check")...)
	t.Logf("--check on the converged cluster: exit %d in %s", code, took.Round(time.Millisecond))
	if code != 0 {
		t.Fatalf("--check on the converged cluster: exit %d\n%s", code, tail(errs, 30))
	}
	if r := parseRun(t, out); r.Changed != 0 {
		t.Errorf("--check on the converged cluster: %d would change, want 0", r.Changed)
	}
	if f := strings.Fields(lineWith(errs, "nfs_server : List each export over NFS")); len(f) < 2 || f[1] != "ok" {
		t.Errorf("--check on the converged cluster did not verify the exports over NFS:\n%s", tail(errs, 40))
	}
	// A request with one more export and PV than the bed has.
	req := b.requestDoc(t)
	k := req["additionalParams"].(map[string]any)["k8s_cluster_installation_param"].(map[string]any)
	ss := k["storage_server"].(map[string]any)
	mount := ss["cinder_volume_setup_params"].([]any)[0].(map[string]any)["mount_to"].(string)
	ss["nfs_server_setup_params"] = append(ss["nfs_server_setup_params"].([]any), map[string]any{"export_dir": mount + "/nfs/review", "export_to": "10.231.0.0/24"})
	pkg := b.copyPackage(t)
	manifest := fmt.Sprintf("apiVersion: v1\nkind: PersistentVolume\nmetadata:\n  name: nfs-review\nspec:\n  capacity:\n    storage: 1Gi\n  accessModes: [ReadWriteMany]\n  persistentVolumeReclaimPolicy: Retain\n  nfs:\n    server: 0.0.0.0\n    path: %s/nfs/review\n", mount)
	if err := os.WriteFile(filepath.Join(pkg, "Files", "kubernetes", "nfs-review.yaml"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	k["pv_registration_params"] = append(k["pv_registration_params"].([]any), map[string]any{"pv_manifest_file_path": "Files/kubernetes/nfs-review.yaml", "nfs_server_cp": "storage_server_CP"})
	reqFile := writeRequest(t, req)

	before := b.fingerprint(t)
	report := filepath.Join(t.TempDir(), "review.md")
	args := setFlag(setFlag(b.opArgs("instantiate-end", "--check", "--report", report), "--request", reqFile), "--package", pkg)
	code, out, errs, took = b.heatsible(t, args...)
	t.Logf("--check: exit %d in %s", code, took.Round(time.Millisecond))
	if code != 0 {
		t.Fatalf("--check: exit %d\n%s", code, tail(errs, 40))
	}
	after := b.fingerprint(t)
	if before != after {
		t.Errorf("the dry run changed the bed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	r := parseRun(t, out)
	if r.Changed == 0 {
		t.Errorf("the dry run reports no change, but the request adds an export and a PV")
	}
	md, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{mount + "/nfs/review", "**would change**: pv_register : Apply the PersistentVolume manifests",
		fmt.Sprintf("%d changes on %d hosts", r.Changed, r.ChangedHosts)} {
		if !strings.Contains(string(md), want) {
			t.Errorf("the review report does not mention %q", want)
		}
	}
	if t.Failed() {
		t.Logf("review report:\n%s", md)
	}
	if _, err := b.try("storage", "test", "-e", mount+"/nfs/review"); err == nil {
		t.Errorf("%s/nfs/review exists after a dry run", mount)
	}
}

// TestPasswordsNowhere runs a full operation and looks for the bed's
// password in heatsible's output, its run records, the command lines and
// environments of every process on this machine and on the Ansible host
// while it runs, and the Ansible host's staging area afterwards.
func TestPasswordsNowhere(t *testing.T) {
	b := needBed(t)
	secret := b.env["BED_PASSWORD"]
	if len(secret) < 8 {
		t.Fatalf("the bed's password is too short to search for: %q", secret)
	}
	state := t.TempDir()
	var mu sync.Mutex
	var leaks []string
	leak := func(where string) {
		mu.Lock()
		defer mu.Unlock()
		if len(leaks) < 20 {
			leaks = append(leaks, where)
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // sample argv and environments while the run goes on
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			procs, _ := filepath.Glob("/proc/[0-9]*")
			for _, p := range procs {
				for _, f := range []string{"cmdline", "environ"} {
					if data, err := os.ReadFile(p + "/" + f); err == nil && strings.Contains(string(data), secret) {
						comm, _ := os.ReadFile(p + "/comm")
						if !strings.Contains(string(comm), "go") && !strings.Contains(string(comm), "e2e.test") {
							leak(fmt.Sprintf("this machine: %s/%s (%s)", p, f, strings.TrimSpace(string(comm))))
						}
					}
				}
			}
			if out, err := b.try("ansible", "sh", "-c", "for p in /proc/[0-9]*; do cat $p/cmdline $p/environ 2>/dev/null | tr '\\0' ' '; echo; done"); err == nil && strings.Contains(out, secret) {
				leak("the Ansible host: a process's argv or environment")
			}
			time.Sleep(300 * time.Millisecond)
		}
	}()
	cmd := b.command(t, state, b.opArgs("instantiate-end")...)
	out, err := cmd.CombinedOutput()
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("instantiate-end: %v\n%s", err, tail(string(out), 30))
	}
	if strings.Contains(string(out), secret) {
		leak("heatsible's output")
	}
	filepath.Walk(state, func(p string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			f, _ := os.Open(p)
			defer f.Close()
			sc := bufio.NewScanner(f)
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			for sc.Scan() {
				if strings.Contains(sc.Text(), secret) {
					leak("run record " + p)
					break
				}
			}
		}
		return nil
	})
	if out, err := b.try("ansible", "sh", "-c", "grep -rl -F -- \"$0\" /home/*/.heatsible /root/.heatsible /tmp 2>/dev/null; true", secret); err == nil && strings.TrimSpace(out) != "" {
		leak("the Ansible host's files after the run: " + strings.TrimSpace(out))
	}
	for _, l := range leaks {
		t.Errorf("the password leaked into %s", l)
	}
}
