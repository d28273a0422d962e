package inventory

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// FuzzWrite builds a three-node cluster (master, worker, storage) from
// fuzzed node names, addresses and users. Whatever Build accepts must be
// written in both formats, and the real ansible-inventory --list must read
// back exactly the same hosts, groups and variables (as strings), without a
// warning. ansible-inventory runs only for inputs Build accepted, and the
// check is skipped when it is not installed.
func FuzzWrite(f *testing.F) {
	f.Add("master-0", "192.0.2.10", "workernode-a1b2c3d4e5f6", "192.0.2.21", "storage-server", "10.10.0.45", "10.10.0.10", "ubuntu", "ubuntu", "admin")
	f.Add("m", "2001:db8::23", "w", "fd00::23", "s", "::1", "fe80::1", "u", "_u.x-y", "a@b")
	f.Add("m", "nfs.example.com", "w", "host-1.example.com.", "s", "a", "b", "root", "user:1", "x")
	f.Add("master-0", "10.0.0.1", "etcd", "10.0.0.2", "all", "10.0.0.3", "10.0.0.4", "True", "None", "1e3")
	f.Add("0", "0x10", "123", "1e3", "s", "inf", "nan", "1_000", "0o17", "-1")
	// YAML 1.1 (PyYAML, which Ansible uses) reads more than YAML 1.2 does.
	f.Add("no", "2001-01-01", "on", "0b101", "y", "1-2j", "a", "yes", "1:20", "Off")
	f.Add("2001-01-01", "null", "s1", "nfs.example.com", "s2", "a", "b", "NULL", "~", ".inf")
	_, err := exec.LookPath("ansible-inventory")
	haveAnsible := err == nil
	f.Fuzz(func(t *testing.T, n1, a1, n2, a2, n3, a3, ip, u1, u2, u3 string) {
		nodes := []Node{
			{Name: n1, Role: Master, SSHAddress: a1, Address: ip},
			{Name: n2, Role: Worker, SSHAddress: a2, Address: a2},
			{Name: n3, Role: Storage, SSHAddress: a3, Address: a3},
		}
		inv, err := Build(nodes, Users{Master: u1, Worker: u2, Storage: u3})
		if err != nil {
			return
		}
		want := expected(inv)
		for _, format := range []Format{INI, YAML} {
			var buf bytes.Buffer
			if err := inv.Write(&buf, format); err != nil {
				t.Fatalf("Build accepted the nodes but Write(%s) failed: %v", format, err)
			}
			if !haveAnsible {
				continue
			}
			got, warn, err := ansibleInventory(t, buf.Bytes(), format)
			if err != nil {
				t.Fatalf("ansible-inventory cannot read the %s inventory: %v\n%s", format, err, buf.String())
			}
			if warn != "" {
				t.Fatalf("ansible-inventory warned about the %s inventory:\n%s\n%s", format, warn, buf.String())
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("ansible-inventory read the %s inventory differently\n got: %v\nwant: %v\n%s", format, got, want, buf.String())
			}
		}
	})
}

// loaded is what an inventory means: hostvars (as Go values, so that a
// value Ansible turned into a number or a boolean shows) and, per group, its
// sorted direct hosts and children.
type loaded struct {
	HostVars map[string]map[string]any
	Hosts    map[string][]string
	Children map[string][]string
}

func (l loaded) String() string {
	b, _ := json.Marshal(l)
	return string(b)
}

func expected(inv *Inventory) loaded {
	l := loaded{HostVars: map[string]map[string]any{}, Hosts: map[string][]string{}, Children: map[string][]string{}}
	for _, h := range inv.Hosts {
		vars := map[string]any{}
		for _, v := range h.Vars {
			vars[v.Name] = v.Value
		}
		l.HostVars[h.Name] = vars
	}
	for _, g := range inv.Groups {
		if len(g.Hosts) > 0 {
			l.Hosts[g.Name] = sorted(g.Hosts)
		}
		if len(g.Children) > 0 {
			l.Children[g.Name] = sorted(g.Children)
		}
	}
	return l
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

func ansibleInventory(t *testing.T, data []byte, format Format) (loaded, string, error) {
	dir := t.TempDir()
	path := filepath.Join(dir, "hosts."+string(format))
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ansible-inventory", "-i", path, "--list")
	cmd.Env = append(os.Environ(), "ANSIBLE_INVENTORY_UNPARSED_FAILED=true", "ANSIBLE_INVENTORY_ENABLED=ini,yaml",
		"ANSIBLE_LOCAL_TEMP="+dir, "ANSIBLE_HOME="+dir, "ANSIBLE_NOCOLOR=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return loaded{}, "", fmt.Errorf("%v\n%s", err, stderr.String())
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(out, &raw); err != nil {
		return loaded{}, "", err
	}
	l := loaded{HostVars: map[string]map[string]any{}, Hosts: map[string][]string{}, Children: map[string][]string{}}
	for name, msg := range raw {
		if name == "_meta" {
			var meta struct {
				HostVars map[string]map[string]any `json:"hostvars"`
			}
			if err := json.Unmarshal(msg, &meta); err != nil {
				return loaded{}, "", err
			}
			for h, vars := range meta.HostVars {
				l.HostVars[h] = vars
			}
			continue
		}
		var g struct {
			Hosts    []string `json:"hosts"`
			Children []string `json:"children"`
		}
		if err := json.Unmarshal(msg, &g); err != nil {
			return loaded{}, "", err
		}
		if name == GroupAll || name == "ungrouped" {
			// Ansible's own groups: all's children are every top-level
			// group, which says nothing about the file.
			continue
		}
		if len(g.Hosts) > 0 {
			l.Hosts[name] = sorted(g.Hosts)
		}
		if len(g.Children) > 0 {
			l.Children[name] = sorted(g.Children)
		}
	}
	warn := ""
	if s := stderr.String(); strings.Contains(s, "WARNING") {
		warn = s
	}
	return l, warn, nil
}
