// Package e2e holds heatsible's end-to-end tests. They run the real
// heatsible binary against the local test bed (testbed/, docs/testbed.md):
// real sshd hosts, ganesha, a loop-device volume, a kube-apiserver with the
// PV controller and a real Keystone + Heat. They skip, saying why, when
// HEATSIBLE_BED (the bed's run directory) is not set; scripts/test-all.sh
// sets it after "testbed/bin/bed up".
package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// bed is the running test bed.
type bed struct {
	dir  string            // testbed/run
	root string            // the repository
	env  map[string]string // testbed/run/env
	bin  string            // the heatsible binary under test
}

var heatsibleBin string

func TestMain(m *testing.M) {
	if os.Getenv("HEATSIBLE_BED") != "" {
		dir, err := os.MkdirTemp("", "heatsible-e2e-bin-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		heatsibleBin = filepath.Join(dir, "heatsible")
		cmd := exec.Command("go", "build", "-o", heatsibleBin, "../../cmd/heatsible")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building heatsible:", err)
			os.Exit(1)
		}
		code := m.Run()
		os.RemoveAll(dir)
		os.Exit(code)
	}
	os.Exit(m.Run())
}

func needBed(t *testing.T) *bed {
	t.Helper()
	dir := os.Getenv("HEATSIBLE_BED")
	if dir == "" {
		t.Skip("HEATSIBLE_BED is not set: bring the test bed up (testbed/bin/bed up) and set HEATSIBLE_BED=testbed/run, or run make test")
	}
	b := &bed{dir: dir, root: filepath.Join(dir, "..", ".."), env: map[string]string{}, bin: heatsibleBin}
	f, err := os.Open(filepath.Join(dir, "env"))
	if err != nil {
		t.Fatalf("the bed has no env file: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if ok {
			val, err := shellWord(v)
			if err != nil {
				t.Fatalf("testbed/run/env: %s: %v", strings.TrimPrefix(k, "export "), err)
			}
			b.env[strings.TrimPrefix(k, "export ")] = val
		}
	}
	for _, k := range []string{"BED_USER", "BED_PASSWORD", "OS_AUTH_URL", "HEATSIBLE_STACK"} {
		if b.env[k] == "" {
			t.Fatalf("testbed/run/env has no %s", k)
		}
	}
	b.bedGuard(t)
	return b
}

// shellWord reads the value of a KEY=value line of a POSIX shell
// environment file as sh would: single quotes keep everything, double
// quotes keep all but the backslash before $ ` " \ and newline, an unquoted
// backslash keeps the next character (that is how the bed's envq writes a
// single quote inside a single-quoted value).
// Expansions are refused: the bed never writes one.
func shellWord(v string) (string, error) {
	var out strings.Builder
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case '\'':
			j := strings.IndexByte(v[i+1:], '\'')
			if j < 0 {
				return "", fmt.Errorf("unterminated single quote in %q", v)
			}
			out.WriteString(v[i+1 : i+1+j])
			i += j + 1
		case '"':
			i++
			for ; i < len(v) && v[i] != '"'; i++ {
				if v[i] == '\\' && i+1 < len(v) && strings.IndexByte("$`\"\\\n", v[i+1]) >= 0 {
					i++
				} else if v[i] == '$' || v[i] == '`' {
					return "", fmt.Errorf("expansion in %q", v)
				}
				out.WriteByte(v[i])
			}
			if i >= len(v) {
				return "", fmt.Errorf("unterminated double quote in %q", v)
			}
		case '\\':
			if i+1 < len(v) {
				i++
				out.WriteByte(v[i])
			}
		case '$', '`':
			return "", fmt.Errorf("expansion in %q", v)
		case ' ', '\t', ';', '&', '|', '<', '>', '(', ')':
			return "", fmt.Errorf("unquoted %q in %q", c, v)
		default:
			out.WriteByte(c)
		}
	}
	return out.String(), nil
}

// exec runs a command on a bed host as root and returns its stdout.
func (b *bed) exec(t *testing.T, host string, args ...string) string {
	t.Helper()
	out, err := b.try(host, args...)
	if err != nil {
		t.Fatalf("on %s: %s: %v\n%s", host, strings.Join(args, " "), err, out)
	}
	return out
}

func (b *bed) try(host string, args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(b.root, "testbed", "bin", "bed"), append([]string{"exec", host, "--"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out) + stderr.String(), err
	}
	return string(out), nil
}

// kubectl runs kubectl on master-0 as kubespray does: as root, with the
// admin kubeconfig /etc/kubernetes/admin.conf (every BED_KUBECONFIG layout
// has it; the SSH user has no kubeconfig in kubespray's).
func (b *bed) kubectl(t *testing.T, args ...string) string {
	t.Helper()
	return b.exec(t, "master-0", kubectlArgv(args...)...)
}

// kubectlArgv is the command bed.kubectl runs on master-0 (for b.try).
func kubectlArgv(args ...string) []string {
	return append([]string{"kubectl", "--kubeconfig", "/etc/kubernetes/admin.conf"}, args...)
}

// runResult is heatsible run's -o json document.
type runResult struct {
	OK       bool   `json:"ok"`
	ExitCode int    `json:"exit_code"`
	Where    string `json:"where"`
	Recap    map[string]struct {
		OK, Changed, Failed, Unreachable, Skipped int
	} `json:"recap"`
	Changed      int     `json:"changed"`
	ChangedHosts int     `json:"changed_hosts"`
	Seconds      float64 `json:"seconds"`
	// VIM is -o json's "vim" (Tacker's Kubernetes VIM), when the run
	// prepared one.
	VIM *struct {
		Server      string `json:"server"`
		CACert      string `json:"ca_cert"`
		BearerToken string `json:"bearer_token"`
	} `json:"vim"`
}

// command is the binary with the bed's OpenStack credentials in its
// environment (and nothing secret in argv), keeping its cluster locks and
// run records in state (a fresh directory if "").
func (b *bed) command(t *testing.T, state string, args ...string) *exec.Cmd {
	t.Helper()
	if state == "" {
		state = t.TempDir()
	}
	cmd := exec.Command(b.bin, args...)
	cmd.Dir = b.root
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "HEATSIBLE_STATE_DIR=" + state}
	for k, v := range b.env {
		if strings.HasPrefix(k, "OS_") {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	return cmd
}

// heatsible runs the binary (see command) with a state directory of its own.
func (b *bed) heatsible(t *testing.T, args ...string) (code int, stdout, stderr string, took time.Duration) {
	t.Helper()
	return b.heatsibleIn(t, "", args...)
}

// heatsibleIn is heatsible with the state directory state ("": one of its
// own), for a test that reads the run records afterwards (taskStatuses).
func (b *bed) heatsibleIn(t *testing.T, state string, args ...string) (code int, stdout, stderr string, took time.Duration) {
	t.Helper()
	cmd := b.command(t, state, args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	start := time.Now()
	err := cmd.Run()
	took = time.Since(start)
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), o.String(), e.String(), took
	}
	if err != nil {
		t.Fatalf("running heatsible: %v", err)
	}
	return 0, o.String(), e.String(), took
}

func parseRun(t *testing.T, stdout string) runResult {
	t.Helper()
	var r runResult
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("heatsible -o json printed no JSON document: %v\n%s", err, stdout)
	}
	return r
}
