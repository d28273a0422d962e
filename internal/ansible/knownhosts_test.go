package ansible

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const khKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHF/KI7vsC0zlJavKfLsw2hlMQ8u1rTKLmGlq6ZkCpHa"

// khLines are known_hosts lines of every form ssh reads.
var khLines = []string{
	"# the operator's comment",
	"10.0.0.1 " + khKey + " plain",
	"10.0.0.2,Node-B " + khKey + " list, upper case",
	"[10.0.0.3]:2222 " + khKey + " other port",
	"*.example.com,!bad.example.com " + khKey + " wildcard and negation",
	"10.0.0.?? " + khKey + " question marks",
	"@cert-authority 10.0.0.* " + khKey + " CA",
	"@revoked 10.0.0.1 " + khKey + " revoked",
	"@revoked 192.0.2.1 " + khKey + " revoked elsewhere",
	"@bogus 10.0.0.1 " + khKey + " unknown marker",
	"2001:db8::1 " + khKey + " IPv6",
	"[2001:db8::1]:2200 " + khKey + " IPv6 other port",
	"192.0.2.7 " + khKey + " someone else's host",
	"10.0.0.1",
	"",
}

func TestSelectKnownHosts(t *testing.T) {
	data := []byte(strings.Join(khLines, "\n") + "\n")
	tests := []struct {
		hosts []string
		want  []int // indexes into khLines
	}{
		{nil, nil},
		{[]string{"10.0.0.1"}, []int{1, 6, 7}},
		{[]string{"10.0.0.1:22"}, []int{1, 6, 7}},
		{[]string{"node-b"}, []int{2}},
		{[]string{"10.0.0.3:2222"}, []int{3}},
		{[]string{"[10.0.0.3]:2222"}, []int{3}},
		{[]string{"10.0.0.3"}, []int{6}},
		{[]string{"a.example.com", "bad.example.com"}, []int{4}},
		{[]string{"10.0.0.42"}, []int{5, 6}},
		{[]string{"2001:db8::1"}, []int{10}},
		{[]string{"[2001:db8::1]:2200"}, []int{11}},
		{[]string{"198.51.100.1"}, nil},
	}
	for _, tt := range tests {
		got := string(SelectKnownHosts(data, tt.hosts))
		var want string
		for _, i := range tt.want {
			want += khLines[i] + "\n"
		}
		if got != want {
			t.Errorf("SelectKnownHosts(%q):\n%s\nwant\n%s", tt.hosts, got, want)
		}
	}
}

// TestSelectKnownHostsLikeSSH compares the selection with what OpenSSH
// itself finds (ssh-keygen -F) for each host, in the plain file and in the
// same file hashed by ssh-keygen -H.
func TestSelectKnownHostsLikeSSH(t *testing.T) {
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Skip("ssh-keygen not installed")
	}
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte(strings.Join(khLines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// ssh-keygen -H refuses a file with invalid lines: hash the valid ones.
	hashed := filepath.Join(dir, "hashed")
	var valid []string
	for _, l := range khLines {
		if !strings.HasPrefix(l, "@bogus") && l != "10.0.0.1" {
			valid = append(valid, l)
		}
	}
	if err := os.WriteFile(hashed, []byte(strings.Join(valid, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("ssh-keygen", "-H", "-f", hashed).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen -H: %v\n%s", err, out)
	}
	hashedData, _ := os.ReadFile(hashed)
	if !strings.Contains(string(hashedData), "|1|") {
		t.Fatalf("ssh-keygen -H hashed nothing:\n%s", hashedData)
	}
	hosts := []string{"10.0.0.1", "node-b", "NODE-B", "10.0.0.3:2222", "10.0.0.3", "a.example.com", "bad.example.com", "10.0.0.42", "2001:db8::1",
		"[2001:db8::1]:2200", "192.0.2.7", "192.0.2.1", "198.51.100.1"}
	for _, file := range []string{plain, hashed} {
		content, _ := os.ReadFile(file)
		for _, h := range hosts {
			out, err := exec.Command("ssh-keygen", "-F", knownHostsName(h), "-f", file).Output()
			if err != nil && len(out) > 0 {
				t.Fatalf("ssh-keygen -F %s: %v", h, err)
			}
			var want []string
			for _, l := range strings.Split(string(out), "\n") {
				if l != "" && !strings.HasPrefix(l, "#") {
					want = append(want, l)
				}
			}
			var got []string
			for _, l := range strings.Split(string(SelectKnownHosts(content, []string{h})), "\n") {
				if l != "" {
					got = append(got, l)
				}
			}
			slices.Sort(want)
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("%s, host %s:\nselected\n%s\nssh-keygen -F finds\n%s", filepath.Base(file), h, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		}
	}
}

// TestBundleKnownHosts: the bundle carries the operator's lines for the
// run's hosts only, and none when it is told no host.
func TestBundleKnownHosts(t *testing.T) {
	for _, tt := range []struct {
		hosts []string
		want  string
	}{
		{nil, ""},
		{[]string{"10.0.0.1", "node-b"}, khLines[1] + "\n" + khLines[2] + "\n" + khLines[6] + "\n" + khLines[7] + "\n"},
	} {
		spec := minimalSpec(t)
		spec.KnownHosts = []byte(strings.Join(khLines, "\n"))
		spec.KnownHostsFor = tt.hosts
		b, err := NewBundle(spec)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(b.Dir, KnownHostsFile))
		b.Close()
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tt.want {
			t.Errorf("hosts %q: the bundle's known_hosts is\n%s\nwant\n%s", tt.hosts, got, tt.want)
		}
	}
}
