package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// loopbackTopology is a cluster whose nodes are closed loopback ports:
// ansible-playbook really runs and finds every host unreachable, fast.
const loopbackTopology = `cluster: rep-test
stack: rep-test
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

// TestRunReportAndRecord runs "run --check --local --report" for real
// (ansible-playbook against unreachable loopback hosts) in text and JSON
// output, and checks the report file, the record and the error's log path.
func TestRunReportAndRecord(t *testing.T) {
	if _, err := exec.LookPath("ansible-playbook"); err != nil {
		t.Skip("ansible-playbook not on PATH")
	}
	tmp := t.TempDir()
	t.Setenv("HEATSIBLE_STATE_DIR", filepath.Join(tmp, "state"))
	topo := filepath.Join(tmp, "topo.yaml")
	kh := filepath.Join(tmp, "known_hosts")
	if err := os.WriteFile(topo, []byte(loopbackTopology), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kh, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	secrets := []string{"test-password-m", "test-password-w", "test-password-s", "password1", "password2"}
	logRE := regexp.MustCompile(`\(log: (/[^)]+/run\.log)\)"?\n?$`)
	tests := []struct {
		name, file string
		json       bool
	}{
		{"markdown", "review.md", false},
		{"json", "review.json", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rf := filepath.Join(tmp, tt.file)
			args := []string{"run", "instantiate-end", "--check", "--local", "--known-hosts", kh,
				"--request", filepath.Join(td, "requests", "valid.json"), "--package", filepath.Join(td, "package"),
				"--topology", topo, "--report", rf}
			if tt.json {
				args = append([]string{"-o", "json"}, args...)
			}
			code, out, errs := heatsible(t, args...)
			if code != 3 {
				t.Fatalf("exit %d, want 3 (unreachable)\n%s\n%s", code, out, errs)
			}
			last := strings.TrimRight(errs, "\n")
			if tt.json {
				var e struct{ Error string }
				// stderr: the progress lines, then the error as JSON.
				if err := json.Unmarshal([]byte(errs[strings.Index(errs, "{"):]), &e); err != nil {
					t.Fatalf("stderr is not JSON: %v\n%s", err, errs)
				}
				last = e.Error
			}
			m := logRE.FindStringSubmatch(last)
			if m == nil {
				t.Fatalf("the error does not end with (log: PATH):\n%s", errs)
			}
			if st, err := os.Stat(m[1]); err != nil || st.Mode().Perm() != 0o600 {
				t.Errorf("run log %s: %v %v", m[1], st, err)
			}
			b, err := os.ReadFile(rf)
			if err != nil {
				t.Fatal(err)
			}
			if st, _ := os.Stat(rf); st.Mode().Perm() != 0o644 {
				t.Errorf("report mode %v", st.Mode().Perm())
			}
			for _, s := range secrets {
				if strings.Contains(string(b), s) || strings.Contains(out, s) || strings.Contains(errs, s) {
					t.Errorf("the output or the report holds the secret %q", s)
				}
			}
			if tt.json {
				var doc struct {
					Record string
					Report struct{ Summary string }
				}
				if err := json.Unmarshal([]byte(out), &doc); err != nil {
					t.Fatalf("stdout: %v\n%s", err, out)
				}
				if doc.Report.Summary != "0 changes on 0 hosts would be made" || filepath.Join(doc.Record, "run.log") != m[1] {
					t.Errorf("stdout JSON: %+v (log %s)", doc, m[1])
				}
				var rep struct{ Hosts []struct{ Name string } }
				if err := json.Unmarshal(b, &rep); err != nil || len(rep.Hosts) == 0 {
					t.Errorf("report file: %v %+v", err, rep)
				}
				return
			}
			for _, want := range []string{"# heatsible instantiate-end on rep-test: review report", "**unreachable**", "**0 changes on 0 hosts would be made.**\n"} {
				if !strings.Contains(string(b), want) {
					t.Errorf("the report lacks %q:\n%s", want, b)
				}
			}
			if !strings.Contains(errs, "review report: "+rf) {
				t.Errorf("stderr does not name the report:\n%s", errs)
			}
		})
	}
}

// TestRunErrorsNameTheLog: every error "run" prints ends with the path of
// its run log, also when the run stops before reading the cluster.
func TestRunErrorsNameTheLog(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	t.Setenv("HEATSIBLE_STATE_DIR", state)
	topo := filepath.Join(td, "topology", "k8s-a.yaml")
	pkg := filepath.Join(td, "package")
	req := func(name string) string { return filepath.Join(td, "requests", name+".json") }
	logRE := regexp.MustCompile(`\(log: (` + regexp.QuoteMeta(state) + `/runs/([^/]+)/[^/]+/run\.log)\)$`)
	tests := []struct {
		name    string
		args    []string
		cluster string
		stderr  string
	}{
		{"bad request", []string{"--request", req("bad_cidr"), "--package", pkg, "--topology", topo}, "k8s-a", "is not an IP address or CIDR"},
		{"topology mismatch", []string{"--request", req("external_lb"), "--package", pkg, "--topology", topo}, "k8s-a", "has no external_lb node"},
		{"both local and ansible host", []string{"--local", "--ansible-host", "192.0.2.1", "--request", req("valid"), "--package", pkg, "--stack", "my-stack"}, "my-stack", "not both"},
		{"no known_hosts", []string{"--local", "--known-hosts", "/nonexistent", "--request", req("valid"), "--package", pkg, "--topology", topo}, "k8s-a", "--known-hosts /nonexistent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errs := heatsible(t, append([]string{"run", "instantiate-end"}, tt.args...)...)
			if code != 2 || !strings.Contains(errs, tt.stderr) {
				t.Fatalf("exit %d, stderr:\n%s", code, errs)
			}
			m := logRE.FindStringSubmatch(strings.TrimRight(errs, "\n"))
			if m == nil || m[2] != tt.cluster {
				t.Fatalf("stderr does not end with (log: %s/runs/%s/.../run.log):\n%s", state, tt.cluster, errs)
			}
			st, err := os.Stat(m[1])
			if err != nil || st.Mode().Perm() != 0o600 {
				t.Fatalf("%s: %v %v", m[1], st, err)
			}
			b, _ := os.ReadFile(m[1])
			if !strings.Contains(string(b), `"kind":"error"`) || !strings.Contains(string(b), tt.stderr) {
				t.Errorf("run.log lacks the error:\n%s", b)
			}
		})
	}
}
