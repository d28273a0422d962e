package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/heatsible/heatsible/internal/params"
)

// hostileDir is the corpus of malformed and hostile inputs; its README.md
// holds the table of cases with the field each must be refused on.
var hostileDir = filepath.Join(td, "hostile")

// hostileCase is one row of testdata/hostile/README.md.
type hostileCase struct {
	name   string
	attack string
	path   string // the full JSON path the problem must name
}

var caseRow = regexp.MustCompile("^\\| `([a-z0-9_]+)` \\| (.*) \\| `([^`]+)` \\|$")

func hostileCases(t *testing.T) []hostileCase {
	t.Helper()
	f, err := os.Open(filepath.Join(hostileDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cases []hostileCase
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m := caseRow.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		c := hostileCase{name: m[1], attack: m[2], path: m[3]}
		if strings.HasPrefix(c.path, ".") {
			c.path = params.Prefix + c.path
		}
		if seen[c.name] {
			t.Fatalf("README.md lists %s twice", c.name)
		}
		seen[c.name] = true
		cases = append(cases, c)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(hostileDir, "requests", "*.json"))
	for _, p := range files {
		if name := strings.TrimSuffix(filepath.Base(p), ".json"); !seen[name] {
			t.Errorf("requests/%s.json has no row in README.md", name)
		}
	}
	if len(files) < 40 {
		t.Errorf("the corpus holds %d request files; want at least 40", len(files))
	}
	return cases
}

// connCounter is a TCP listener standing in for the Ansible host: it
// accepts and counts every connection, and closes it at once.
type connCounter struct {
	ln    net.Listener
	count atomic.Int64
}

func listen(t *testing.T) *connCounter {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &connCounter{ln: ln}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			c.count.Add(1)
			conn.Close()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return c
}

var (
	// Every password in the corpus has this form (see the README).
	corpusSecret = regexp.MustCompile(`pw-[a-z]+-[0-9a-f]{12}`)
	// Any other password field, as JSON text.
	passwordField = regexp.MustCompile(`"(?:password|ssh_password)"\s*:\s*("(?:[^"\\]|\\.)*")`)
)

// secretsOf returns the passwords in a request file, read from its text so
// that it works for files that are not valid JSON either.
func secretsOf(t *testing.T, data []byte) []string {
	t.Helper()
	var out []string
	for _, m := range corpusSecret.FindAll(data, -1) {
		out = append(out, string(m))
	}
	for _, m := range passwordField.FindAllSubmatch(data, -1) {
		var s string
		if json.Unmarshal(m[1], &s) == nil && len(s) >= 8 {
			out = append(out, s)
		}
	}
	return out
}

// hostileEnv gives the run its own state directory and an empty
// known_hosts file, and returns the latter.
func hostileEnv(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("HEATSIBLE_STATE_DIR", filepath.Join(dir, "state"))
	kh := filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(kh, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return kh
}

// TestHostileInputs runs every case of testdata/hostile through validate
// and run instantiate-end: exit code 2, the expected field named, no
// password in the output, no connection to the Ansible host.
func TestHostileInputs(t *testing.T) {
	kh := hostileEnv(t)
	lc := listen(t)
	cases := hostileCases(t)
	pkg := filepath.Join(hostileDir, "package")
	gen := generatedCases(t)
	n := 0
	for _, c := range cases {
		req, p := filepath.Join(hostileDir, "requests", c.name+".json"), pkg
		if g, ok := gen[c.name]; ok {
			req, p = g.request, g.pkg
			delete(gen, c.name)
		} else if _, err := os.Stat(req); err != nil {
			t.Errorf("%s: listed in README.md, but %v", c.name, err)
			continue
		}
		n++
		t.Run(c.name, func(t *testing.T) {
			data, err := os.ReadFile(req)
			if err != nil {
				t.Fatal(err)
			}
			secrets := secretsOf(t, data)
			if len(secrets) == 0 && !strings.HasPrefix(c.name, "gen_") {
				t.Fatalf("no password found in %s; every case carries its own", req)
			}
			for _, args := range [][]string{
				{"validate", "--request", req, "--package", p},
				{"run", "instantiate-end", "--request", req, "--package", p,
					"--topology", filepath.Join(td, "topology", "k8s-a.yaml"),
					"--ansible-host", lc.ln.Addr().String(), "--known-hosts", kh},
			} {
				before := lc.count.Load()
				code, out, errs := heatsibleTimeout(t, 60*time.Second, args...)
				if got := lc.count.Load() - before; got != 0 {
					t.Errorf("%s: %d connection(s) to the Ansible host; want none", args[0], got)
				}
				if code != 2 {
					t.Errorf("%s: exit code %d, want 2 (%s)\nstdout:\n%s\nstderr:\n%s", args[0], code, c.attack, out, errs)
				}
				if want := "  " + c.path + ": "; !strings.Contains(errs, want) {
					t.Errorf("%s: stderr does not name %s (%s):\n%s", args[0], c.path, c.attack, errs)
				}
				for _, s := range secrets {
					if strings.Contains(out, s) || strings.Contains(errs, s) {
						t.Errorf("%s: the output holds a password of the request (%.20q...)", args[0], s)
					}
				}
				for _, line := range strings.Split(errs, "\n") {
					if len(line) > 1000 {
						t.Errorf("%s: a stderr line of %d bytes: %.200q...", args[0], len(line), line)
					}
				}
			}
		})
	}
	for name := range gen {
		t.Errorf("generated case %s has no row in README.md", name)
	}
	if n < 40 {
		t.Errorf("ran %d cases; want at least 40", n)
	}
	if got := lc.count.Load(); got != 0 {
		t.Errorf("%d connection(s) to the Ansible host over all cases; want none", got)
	}
}

// TestHostileControl runs the corpus' control request, which differs from
// every case by its hostile change only, the same way: it must get as far
// as connecting to the listener. Without this, "no connection" could come
// from a listener nothing can reach.
func TestHostileControl(t *testing.T) {
	kh := hostileEnv(t)
	lc := listen(t)
	req := filepath.Join(hostileDir, "control.json")
	code, out, errs := heatsible(t, "validate", "--request", req, "--package", filepath.Join(hostileDir, "package"))
	if code != 0 {
		t.Fatalf("validate control.json: exit code %d\n%s%s", code, out, errs)
	}
	code, out, errs = heatsibleTimeout(t, 60*time.Second, "run", "instantiate-end", "--request", req,
		"--package", filepath.Join(hostileDir, "package"), "--topology", filepath.Join(td, "topology", "k8s-a.yaml"),
		"--ansible-host", lc.ln.Addr().String(), "--known-hosts", kh)
	if lc.count.Load() == 0 {
		t.Fatalf("the control request opened no connection (exit code %d):\n%s%s", code, out, errs)
	}
	if code != 3 {
		t.Errorf("exit code %d, want 3 (the listener is no SSH server)\n%s%s", code, out, errs)
	}
	data, _ := os.ReadFile(req)
	for _, s := range secretsOf(t, data) {
		if strings.Contains(out+errs, s) {
			t.Errorf("the output holds a password of the request")
		}
	}
}

// heatsibleTimeout is heatsible with a deadline: a hostile input must not
// make it hang (a named pipe as a manifest, say).
func heatsibleTimeout(t *testing.T, d time.Duration, args ...string) (int, string, string) {
	t.Helper()
	type result struct {
		code     int
		out, err string
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan result, 1)
	go func() {
		var out, errb bytes.Buffer
		code := run(ctx, args, &out, &errb)
		done <- result{code, out.String(), errb.String()}
	}()
	select {
	case r := <-done:
		return r.code, r.out, r.err
	case <-time.After(d):
		cancel()
		t.Fatalf("heatsible %s did not return within %s", strings.Join(args, " "), d)
		return 0, "", ""
	}
}

type generated struct {
	request, pkg string
}

// generatedCases makes the inputs too large or too special to commit, in a
// temporary directory. Their rows in README.md start with gen_.
func generatedCases(t *testing.T) map[string]generated {
	t.Helper()
	dir := t.TempDir()
	control, err := os.ReadFile(filepath.Join(hostileDir, "control.json"))
	if err != nil {
		t.Fatal(err)
	}
	goodPV, err := os.ReadFile(filepath.Join(hostileDir, "package", "Files", "kubernetes", "nfs-pv1.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	goodPV2, err := os.ReadFile(filepath.Join(hostileDir, "package", "Files", "kubernetes", "nfs-pv2.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	write := func(p string, data []byte) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// pkgWith makes a package whose nfs-pv1.yaml is made by mk.
	pkgWith := func(name string, mk func(p string)) string {
		p := filepath.Join(dir, name)
		write(filepath.Join(p, "Files", "kubernetes", "nfs-pv2.yaml"), goodPV2)
		mk(filepath.Join(p, "Files", "kubernetes", "nfs-pv1.yaml"))
		return p
	}
	const fifty = 50 << 20
	out := map[string]generated{}

	// A valid request padded to 50 MB in an unknown field.
	big := make([]byte, 0, fifty+len(control)+64)
	big = append(big, "{\n  \"padding\": \""...)
	big = append(big, bytes.Repeat([]byte("a"), fifty)...)
	big = append(big, "\",\n"...)
	big = append(big, bytes.TrimPrefix(bytes.TrimSpace(control), []byte("{"))...)
	write(filepath.Join(dir, "request-50mb.json"), big)
	out["gen_request_50mb"] = generated{filepath.Join(dir, "request-50mb.json"), filepath.Join(hostileDir, "package")}

	req := filepath.Join(dir, "control.json")
	write(req, control)
	// A valid PV manifest padded to 50 MB in an annotation.
	out["gen_manifest_50mb"] = generated{req, pkgWith("pkg-50mb", func(p string) {
		m := bytes.Replace(goodPV, []byte("  name: nfs-pv1\n"), []byte("  name: nfs-pv1\n  annotations:\n    padding: "), 1)
		i := bytes.Index(m, []byte("padding: ")) + len("padding: ")
		padded := append(append(append([]byte{}, m[:i]...), bytes.Repeat([]byte("b"), fifty)...), '\n')
		write(p, append(padded, m[i:]...))
	})}
	// kind: 900 KB, under manifest.MaxSize: Parse reads it all and must not
	// put it all in the message.
	out["gen_manifest_900k_kind"] = generated{req, pkgWith("pkg-kind", func(p string) {
		write(p, bytes.Replace(goodPV, []byte("kind: PersistentVolume"), append([]byte("kind: "), bytes.Repeat([]byte("K"), 900<<10)...), 1))
	})}
	// A named pipe: opening it for reading blocks until a writer comes.
	out["gen_manifest_fifo"] = generated{req, pkgWith("pkg-fifo", func(p string) {
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Fatal(err)
		}
	})}
	// Files/ itself a symlink to a directory outside the package.
	esc := filepath.Join(dir, "pkg-escape")
	if err := os.MkdirAll(esc, 0o755); err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(filepath.Join(hostileDir, "package", "Files"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(abs, filepath.Join(esc, "Files")); err != nil {
		t.Fatal(err)
	}
	out["gen_package_symlink_escape"] = generated{req, esc}
	return out
}
