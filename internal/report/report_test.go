package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heatsible/heatsible/internal/ansible"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// golden compares got with testdata/golden/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test ./internal/report -update rewrites it):\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

func TestGolden(t *testing.T) {
	tests := []struct {
		name    string
		summary string
		changes int
		hosts   int
	}{
		// Hand-built: every outcome, diffs, a role's report, a failure
		// whose message holds a code fence.
		{"check", "5 changes on 3 hosts would be made", 5, 3},
		// Applied with --limit and --tags: nothing to do.
		{"applied", "0 changes on 0 hosts made", 0, 0},
		// Interrupted before the recap.
		{"interrupted", "1 changes on 1 hosts would be made", 1, 1},
		// Recorded: the run.log of a real "run instantiate-end --check" on
		// the test bed (2026-11-22), with a third export added to the
		// request; nfs-common happened to be missing on one worker.
		{"bed-check-pv3", "4 changes on 2 hosts would be made", 4, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", tt.name+".jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			in, err := ReadLog(f)
			if err != nil {
				t.Fatal(err)
			}
			r := Build(in)
			if r.Summary != tt.summary || r.Changes != tt.changes || r.ChangedHosts != tt.hosts {
				t.Errorf("summary %q (%d, %d), want %q", r.Summary, r.Changes, r.ChangedHosts, tt.summary)
			}
			var md, js bytes.Buffer
			if err := r.WriteMarkdown(&md); err != nil {
				t.Fatal(err)
			}
			if err := r.WriteJSON(&js); err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(md.String(), "**"+tt.summary+".**\n") {
				t.Errorf("the Markdown report does not end with the summary:\n%s", md.String())
			}
			golden(t, tt.name+".md", md.Bytes())
			golden(t, tt.name+".json", js.Bytes())
		})
	}
}

func TestOutcomes(t *testing.T) {
	f, err := os.Open("testdata/check.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	in, err := ReadLog(f)
	if err != nil {
		t.Fatal(err)
	}
	r := Build(in)
	got := map[string]Outcome{}
	for _, h := range r.Hosts {
		for _, tk := range h.Tasks {
			got[h.Name+"/"+tk.Task] = tk.Outcome
		}
	}
	tests := []struct {
		key  string
		want Outcome
	}{
		{"storage-server/cinder_volume : Read the device's file system", OK},
		{"storage-server/nfs_server : Write /etc/exports", WouldChange},
		{"storage-server/nfs_server : Verify the exports", Skipped},
		{"worker-1/nfs_client : Install the NFS client", Unreachable},
		{"master-0/pv_register : Refuse | Bound PVs", Failed},
	}
	for _, tt := range tests {
		if got[tt.key] != tt.want {
			t.Errorf("%s: %q, want %q", tt.key, got[tt.key], tt.want)
		}
	}
	in.Check = false
	if o := Build(in).Hosts[1].Tasks[1].Outcome; o != Changed {
		t.Errorf("applied run: %q, want changed", o)
	}
}

// TestWriteJSONForPeople: the JSON report writes "&<>" as they are (not
// \u0026\u003c\u003e, which a reader cannot read and a search for a
// leaked secret would have to guess) and stays valid JSON.
func TestWriteJSONForPeople(t *testing.T) {
	res := &ansible.Result{Events: []ansible.Event{{Kind: ansible.KindResult, Play: "p", Task: "a & b <c>", Host: "h", Status: ansible.StatusFailed, Msg: "x < y && z > 0"}}}
	var buf bytes.Buffer
	if err := Build(Input{Operation: "op", Cluster: "c", Result: res}).WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	if !json.Valid(buf.Bytes()) || !strings.Contains(buf.String(), `"task": "a & b <c>"`) || !strings.Contains(buf.String(), `"msg": "x < y && z > 0"`) {
		t.Errorf("WriteJSON:\n%s", buf.String())
	}
}
