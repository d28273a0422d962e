package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The bed between tests.
//
// The end-to-end tests share one bed, and a test that stops half-way (a
// failed assertion, a process that exited before it was killed, a panic)
// must not take the others down with it. So every test that calls needBed
// is framed by bedGuard:
//
//   - before it acts, the bed is checked: no cluster lock record and no
//     staging directory on the Ansible host, no ansible-playbook running
//     there, only the bed's own PVs (Available, on the storage server, no
//     claim), no claim, and the faults the tests inject undone (ganesha
//     masked, exportfs shadowed, scratch devices, the API server rule,
//     transient units, a host whose sshd does not answer, the Heat stack not
//     complete or not its size). Whatever is
//     found is named with the test that ran before, then put right; the
//     test fails only when it cannot be put right.
//   - after it (its own cleanups have run: this one was registered first),
//     the same check: what the test left fails that test, and is put right
//     so that the next one starts clean.
//
// A test's own cleanups still come first and are registered before it
// acts; the guard is the net under them, for the things every test shares.

// guardState remembers which test ran last and what it left, for the next
// test's message.
var guardState struct {
	sync.Mutex
	last string
}

// dirt is one thing found on the bed that no test should leave, with what
// puts it right.
type dirt struct {
	what string
	fix  func() error
}

func (d dirt) String() string { return d.what }

// guardTimeout bounds the wait for a killed run's remnants (its SSH
// session, which holds the lock on the Ansible host, ends when the
// connection drops; ansible-playbook's watchdog stops it within seconds).
const guardTimeout = 60 * time.Second

// bedGuard checks the bed before t acts and registers the check after it
// (see above). needBed calls it.
func (b *bed) bedGuard(t *testing.T) {
	t.Helper()
	if os.Getenv("HEATSIBLE_E2E_NO_GUARD") == "1" {
		return
	}
	guardState.Lock()
	prev := guardState.last
	guardState.Unlock()
	if prev == "" {
		prev = "something before this go test run (an earlier run, or a hand on the bed)"
	}
	start := time.Now()
	found := b.settle(t)
	t.Logf("bed guard: %d finding(s) before the test, checked in %s", len(found), time.Since(start).Round(time.Millisecond))
	if len(found) > 0 {
		t.Logf("the bed was not clean before %s; left by %s: %s", t.Name(), prev, joinDirt(found))
		if left := b.restore(t, found); len(left) > 0 {
			t.Fatalf("the bed is not clean (left by %s) and could not be put right: %s", prev, joinDirt(left))
		}
		t.Logf("put right before %s", t.Name())
	}
	t.Cleanup(func() {
		guardState.Lock()
		guardState.last = t.Name()
		guardState.Unlock()
		start := time.Now()
		found := b.settle(t)
		t.Logf("bed guard: %d finding(s) after the test, checked in %s", len(found), time.Since(start).Round(time.Millisecond))
		if len(found) == 0 {
			return
		}
		t.Errorf("%s left the bed dirty: %s", t.Name(), joinDirt(found))
		if left := b.restore(t, found); len(left) > 0 {
			t.Errorf("and it could not be put right (the next test will say so): %s", joinDirt(left))
		}
	})
}

func joinDirt(ds []dirt) string {
	s := make([]string, len(ds))
	for i, d := range ds {
		s[i] = d.what
	}
	return strings.Join(s, "; ")
}

// settle returns what check finds once a killed run's remnants had time to
// go (guardTimeout): locks still held and playbooks still running are only
// dirt once they outlive it.
func (b *bed) settle(t *testing.T) []dirt {
	t.Helper()
	deadline := time.Now().Add(guardTimeout)
	for {
		found, transient := b.check(t)
		if !transient || time.Now().After(deadline) {
			return found
		}
		time.Sleep(time.Second)
	}
}

// restore applies each fix, then checks again; it returns what is still
// there.
func (b *bed) restore(t *testing.T, found []dirt) []dirt {
	t.Helper()
	for _, d := range found {
		if d.fix == nil {
			continue
		}
		if err := d.fix(); err != nil {
			t.Logf("putting right %q: %v", d.what, err)
		}
	}
	left, _ := b.check(t)
	return left
}

// check looks at the bed once. transient says that some of what it found
// may still go by itself (a held lock, a running ansible-playbook).
func (b *bed) check(t *testing.T) (found []dirt, transient bool) {
	t.Helper()
	// Independent looks at different hosts: at once (about 0.5 s instead
	// of 1.2 s, twice per test).
	looks := []func() []dirt{
		func() []dirt {
			f, tr := b.checkAnsibleHost()
			transient = tr
			return f
		},
		b.checkPVs, b.checkStorage, b.checkMaster, b.checkSSH,
	}
	if b.env["OS_AUTH_URL"] != "" {
		looks = append(looks, b.checkHeat)
	}
	results := make([][]dirt, len(looks))
	var wg sync.WaitGroup
	for i, look := range looks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = look()
		}()
	}
	wg.Wait()
	for _, r := range results {
		found = append(found, r...)
	}
	return found, transient
}

// ansibleScript reports, one per line: "lock FILE held|free RECORD",
// "stage DIR", "playbook PID CMD" for BED_USER's heatsible files on the
// Ansible host.
const ansibleScript = `u=$1
home=$(getent passwd "$u" | cut -d: -f6)
for f in "$home"/.heatsible/locks/*.lock; do
  [ -f "$f" ] || continue
  if flock -n "$f" true; then st=free; else st=held; fi
  rec=$(head -c 300 "$f" | tr -d '\n\r')
  [ "$st" = free ] && [ -z "$rec" ] && continue
  echo "lock $f $st $rec"
done
for d in "$home"/.heatsible/runs/heatsible-*; do [ -e "$d" ] && echo "stage $d"; done
pgrep -a -f '[a]nsible-playbook' | sed 's/^/playbook /'
true`

func (b *bed) checkAnsibleHost() (found []dirt, transient bool) {
	out, err := b.try("ansible", "sh", "-c", ansibleScript, "sh", b.env["BED_USER"])
	if err != nil {
		return []dirt{{what: fmt.Sprintf("the Ansible host does not answer: %v %s", err, strings.TrimSpace(out))}}, false
	}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		kind, rest, _ := strings.Cut(l, " ")
		switch kind {
		case "lock":
			f := strings.Fields(rest)
			if len(f) < 2 {
				continue
			}
			file, state := f[0], f[1]
			rec := strings.TrimSpace(strings.TrimPrefix(rest, file+" "+state))
			if state == "held" {
				transient = true
				found = append(found, dirt{
					what: fmt.Sprintf("the cluster lock %s on the Ansible host is held (by %s) with no test running", file, rec),
					fix: func() error {
						// Its session is a shell of BED_USER's waiting on
						// its stdin; end it, the kernel frees the flock.
						_, err := b.try("ansible", "sh", "-c", `fuser -k -TERM "$1" 2>/dev/null; sleep 1; : > "$1"`, "sh", file)
						return err
					},
				})
				continue
			}
			found = append(found, dirt{
				what: fmt.Sprintf("the cluster lock %s on the Ansible host names a run that did not finish: %s", file, rec),
				fix: func() error {
					_, err := b.try("ansible", "sh", "-c", `flock -n "$1" sh -c ': > "$1"' sh "$1"`, "sh", file)
					return err
				},
			})
		case "stage":
			dir := rest
			found = append(found, dirt{
				what: "a staging directory on the Ansible host: " + dir,
				fix: func() error {
					_, err := b.try("ansible", "rm", "-rf", "--", dir)
					return err
				},
			})
		case "playbook":
			transient = true
			pid, _, _ := strings.Cut(rest, " ")
			found = append(found, dirt{
				what: "ansible-playbook still runs on the Ansible host: " + rest,
				fix: func() error {
					_, err := b.try("ansible", "sh", "-c", `kill -KILL "$1" 2>/dev/null; true`, "sh", pid)
					return err
				},
			})
		}
	}
	return found, transient
}

// bedPVNames are the names of the PVs the bed's request registers (its
// manifests are named after them).
func (b *bed) bedPVNames() []string {
	data, err := os.ReadFile(filepath.Join(b.dir, "request.json"))
	if err != nil {
		return nil
	}
	var r request
	if json.Unmarshal(data, &r) != nil {
		return nil
	}
	var names []string
	for _, p := range r.AdditionalParams.K.PVs {
		names = append(names, strings.TrimSuffix(filepath.Base(p.Path), filepath.Ext(p.Path)))
	}
	return names
}

// checkPVs: the bed's PVs are either not registered or registered as
// heatsible leaves them (Available, on the storage server, no claim, no
// test annotation); there is no other PV and no claim anywhere.
func (b *bed) checkPVs() []dirt {
	out, err := b.try("master-0", kubectlArgv("get", "pv,pvc", "-A", "-o", "json", "--request-timeout=20s")...)
	if err != nil {
		return []dirt{{what: fmt.Sprintf("kubectl get pv,pvc on master-0: %v %s", err, strings.TrimSpace(out))}}
	}
	var list struct {
		Items []struct {
			Kind     string
			Metadata struct {
				Name, Namespace string
				Annotations     map[string]string
				Finalizers      []string
				DeletionTS      string `json:"deletionTimestamp"`
			}
			Spec struct {
				NFS      *struct{ Server string }
				ClaimRef *struct{ Name, Namespace string }
			}
			Status struct{ Phase string }
		}
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		return []dirt{{what: fmt.Sprintf("kubectl get pv,pvc: %v", err)}}
	}
	own := b.bedPVNames()
	var found []dirt
	for _, it := range list.Items {
		name, ns := it.Metadata.Name, it.Metadata.Namespace
		switch it.Kind {
		case "PersistentVolumeClaim":
			found = append(found, dirt{
				what: fmt.Sprintf("claim %s/%s (%s)", ns, name, it.Status.Phase),
				fix: func() error {
					b.try("master-0", kubectlArgv("patch", "pvc", "-n", ns, name, "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)...)
					_, err := b.try("master-0", kubectlArgv("delete", "pvc", "-n", ns, name, "--ignore-not-found", "--wait=true", "--timeout=30s")...)
					return err
				},
			})
		case "PersistentVolume":
			var why []string
			if !slices.Contains(own, name) {
				why = append(why, "not one of the bed's PVs")
			}
			if it.Status.Phase != "Available" {
				why = append(why, it.Status.Phase)
			}
			if it.Spec.ClaimRef != nil {
				why = append(why, "claimed by "+it.Spec.ClaimRef.Namespace+"/"+it.Spec.ClaimRef.Name)
			}
			if it.Spec.NFS == nil || it.Spec.NFS.Server != "10.231.0.11" {
				why = append(why, "not on the storage server 10.231.0.11")
			}
			for k := range it.Metadata.Annotations {
				if strings.HasPrefix(k, "heatsible.test/") {
					why = append(why, "annotated "+k)
				}
			}
			if len(why) == 0 {
				continue
			}
			// Put right by deleting it: the next run of instantiate-end
			// (every PV test starts with one) registers the bed's PVs again.
			found = append(found, dirt{
				what: fmt.Sprintf("PV %s: %s", name, strings.Join(why, ", ")),
				fix: func() error {
					b.try("master-0", kubectlArgv("patch", "pv", name, "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)...)
					_, err := b.try("master-0", kubectlArgv("delete", "pv", name, "--ignore-not-found", "--wait=true", "--timeout=30s")...)
					return err
				},
			})
		}
	}
	return found
}

// storageScript reports the faults the storage tests inject, one per
// line: "masked UNIT", "shadowed PATH", "device PATH", "unit UNIT".
const storageScript = `for u in nfs-ganesha nfs-server nfs-ganesha-lock; do
  [ "$(systemctl is-enabled "$u" 2>/dev/null)" = masked ] && echo "masked $u"
done
for p in /usr/sbin/exportfs /usr/bin/nfs-ls; do findmnt -n "$p" >/dev/null 2>&1 && echo "shadowed $p"; done
for d in /dev/hs-*; do [ -e "$d" ] && echo "device $d"; done
systemctl list-units --all --plain --no-legend 'hs-*' 2>/dev/null | awk '{print "unit " $1}'
true`

func (b *bed) checkStorage() []dirt {
	out, err := b.try("storage", "sh", "-c", storageScript)
	if err != nil {
		return []dirt{{what: fmt.Sprintf("the storage host does not answer: %v %s", err, strings.TrimSpace(out))}}
	}
	var found []dirt
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		kind, arg, _ := strings.Cut(l, " ")
		var fix []string
		switch kind {
		case "masked":
			fix = []string{"systemctl", "unmask", arg}
		case "shadowed":
			fix = []string{"umount", arg}
		case "device":
			fix = []string{"rm", "-f", arg}
		case "unit":
			fix = []string{"sh", "-c", `systemctl stop "$1"; systemctl reset-failed "$1" 2>/dev/null; true`, "sh", arg}
		default:
			continue
		}
		found = append(found, dirt{
			what: "on storage: " + l,
			fix: func() error {
				_, err := b.try("storage", fix...)
				return err
			},
		})
	}
	return found
}

// checkMaster: the rule TestAPIServerDown puts in master-0's namespace.
func (b *bed) checkMaster() []dirt {
	out, err := b.try("master-0", "ip", "rule", "show")
	if err != nil {
		return []dirt{{what: fmt.Sprintf("master-0 does not answer: %v %s", err, strings.TrimSpace(out))}}
	}
	if !strings.Contains(out, "dport 26443") {
		return nil
	}
	return []dirt{{what: "master-0 cannot reach the API server (an ip rule for port 26443)", fix: func() error { b.apiUp(); return nil }}}
}

var internalAddr = regexp.MustCompile(`^10\.231\.0\.(\d+)$`)

// checkSSH: every bed host in known_hosts answers on port 22 (a test that
// stops an sshd starts it again).
func (b *bed) checkSSH() []dirt {
	data, err := os.ReadFile(filepath.Join(b.dir, "known_hosts"))
	if err != nil {
		return []dirt{{what: "the bed has no known_hosts: " + err.Error()}}
	}
	seen := map[string]bool{}
	var found []dirt
	for _, l := range strings.Split(string(data), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		for _, h := range strings.Split(f[0], ",") {
			if !internalAddr.MatchString(h) || seen[h] {
				continue
			}
			seen[h] = true
			host := b.hostAt(h)
			if host == "" {
				continue // not running now (a spare the bed did not start)
			}
			c, err := net.DialTimeout("tcp", h+":22", 3*time.Second)
			if err == nil {
				c.Close()
				continue
			}
			found = append(found, dirt{
				what: fmt.Sprintf("%s (%s) does not answer on port 22: %v", host, h, err),
				fix: func() error {
					_, err := b.try(host, "systemctl", "start", "ssh.socket", "ssh.service")
					return err
				},
			})
		}
	}
	return found
}

// hostAt is the name of the running bed host whose internal address is
// addr ("" if none runs): ansible .10, storage .11, master-0 .12, lb .13,
// master-1 .14, master-2 .15 (MASTERS=3, bed masters 3), worker-I .(20+I)
// (docs/testbed.md), running if the bed keeps its pid.
func (b *bed) hostAt(addr string) string {
	m := internalAddr.FindStringSubmatch(addr)
	if m == nil {
		return ""
	}
	var n int
	fmt.Sscan(m[1], &n)
	name := map[int]string{10: "ansible", 11: "storage", 12: "master-0", 13: "lb", 14: "master-1", 15: "master-2"}[n]
	if n >= 20 && n < 84 {
		name = fmt.Sprintf("worker-%d", n-20)
	}
	if name == "" {
		return ""
	}
	if _, err := os.Stat(filepath.Join(b.dir, "bed", "hosts", name, "pid")); err != nil {
		return ""
	}
	return name
}

// TestBedGuardPutsTheBedRight: what a test that stops half-way leaves (a
// lock record of a killed run and a staging directory on the Ansible host,
// a claim, a PV that is not the bed's, ganesha masked, a scratch device) is
// each found by the guard's check and put right by its restore, so the
// next test starts clean.
func TestBedGuardPutsTheBedRight(t *testing.T) {
	b := needBed(t)
	home := "/home/" + b.env["BED_USER"]
	lock := home + "/.heatsible/locks/guard-test.lock"
	stage := home + "/.heatsible/runs/heatsible-guard-test-instantiate-end-x1"
	pvc := `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"guard-test","namespace":"default"},
"spec":{"accessModes":["ReadWriteOnce"],"storageClassName":"guard-test","resources":{"requests":{"storage":"1Gi"}}}}`
	pv := `{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"guard-test-pv"},
"spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],"storageClassName":"guard-test","nfs":{"server":"192.0.2.1","path":"/x"}}}`
	// Undone here too, should the guard not do it.
	t.Cleanup(func() {
		b.try("ansible", "rm", "-rf", lock, stage)
		b.try("master-0", kubectlArgv("delete", "pvc", "-n", "default", "guard-test", "--ignore-not-found")...)
		b.try("master-0", kubectlArgv("delete", "pv", "guard-test-pv", "--ignore-not-found")...)
		b.try("storage", "systemctl", "unmask", "nfs-ganesha")
		b.try("storage", "rm", "-f", "/dev/hs-guard-test")
	})
	u := b.env["BED_USER"]
	b.exec(t, "ansible", "sh", "-c", `set -e
install -d -o "$1" -m 700 "$(dirname "$2")" "$3"
printf '{"operation":"instantiate-end","pid":4242,"host":"guard","started":"2026-01-01T00:00:00Z"}\n' > "$2"
chown "$1" "$2"`, "sh", u, lock, stage)
	b.exec(t, "master-0", "sh", "-c", `printf '%s' "$1" > /tmp/guard-pvc.json && printf '%s' "$2" > /tmp/guard-pv.json`, "sh", pvc, pv)
	b.kubectl(t, "apply", "-f", "/tmp/guard-pvc.json", "-f", "/tmp/guard-pv.json")
	b.exec(t, "master-0", "rm", "-f", "/tmp/guard-pvc.json", "/tmp/guard-pv.json")
	b.exec(t, "storage", "sh", "-c", "systemctl mask nfs-ganesha && mknod -m 600 /dev/hs-guard-test b 7 250")

	found, _ := b.check(t)
	for _, want := range []string{
		"the cluster lock " + lock + " on the Ansible host names a run that did not finish",
		"a staging directory on the Ansible host: " + stage,
		"claim default/guard-test",
		"PV guard-test-pv: not one of the bed's PVs",
		"on storage: masked nfs-ganesha",
		"on storage: device /dev/hs-guard-test",
	} {
		if !strings.Contains(joinDirt(found), want) {
			t.Errorf("the check did not find %q; it found: %s", want, joinDirt(found))
		}
	}
	if left := b.restore(t, found); len(left) > 0 {
		t.Errorf("still there after restore: %s", joinDirt(left))
	}
	if rec, err := b.try("ansible", "cat", lock); err != nil || rec != "" {
		t.Errorf("the lock file after restore: %q, %v; want it emptied (released), as a finished run leaves it", rec, err)
	}
	b.exec(t, "ansible", "rm", "-f", lock)
}

// heatToken is a Keystone token and Heat's endpoint, kept for 30 minutes
// (Keystone gives an hour): asking Keystone for one takes most of a check.
var heatToken struct {
	sync.Mutex
	token, url string
	until      time.Time
}

// heatAuth returns a token and Heat's public endpoint for the bed's admin.
func (b *bed) heatAuth(c *http.Client) (token, heat string, err error) {
	heatToken.Lock()
	defer heatToken.Unlock()
	if time.Now().Before(heatToken.until) {
		return heatToken.token, heatToken.url, nil
	}
	auth := map[string]any{"auth": map[string]any{
		"identity": map[string]any{"methods": []string{"password"}, "password": map[string]any{"user": map[string]any{
			"name": b.env["OS_USERNAME"], "password": b.env["OS_PASSWORD"], "domain": map[string]any{"name": b.env["OS_USER_DOMAIN_NAME"]}}}},
		"scope": map[string]any{"project": map[string]any{"name": b.env["OS_PROJECT_NAME"], "domain": map[string]any{"name": b.env["OS_PROJECT_DOMAIN_NAME"]}}},
	}}
	body, _ := json.Marshal(auth)
	resp, err := c.Post(strings.TrimSuffix(b.env["OS_AUTH_URL"], "/")+"/auth/tokens", "application/json", bytes.NewReader(body))
	if err != nil {
		return "", "", err
	}
	defer resp.Body.Close()
	var tok struct {
		Token struct {
			Catalog []struct {
				Type      string
				Endpoints []struct{ Interface, URL string }
			}
		}
	}
	if resp.StatusCode != http.StatusCreated {
		return "", "", fmt.Errorf("keystone: %s", resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil {
		return "", "", err
	}
	for _, s := range tok.Token.Catalog {
		for _, e := range s.Endpoints {
			if s.Type == "orchestration" && e.Interface == "public" {
				heat = e.URL
			}
		}
	}
	if heat == "" {
		return "", "", errors.New("no orchestration endpoint in Keystone's catalog")
	}
	heatToken.token, heatToken.url, heatToken.until = resp.Header.Get("X-Subject-Token"), heat, time.Now().Add(30*time.Minute)
	return heatToken.token, heat, nil
}

// heatStack is the bed's stack as Heat reports it: its status and how many
// servers it has (nested members included).
func (b *bed) heatStack() (status string, servers int, err error) {
	c := &http.Client{Timeout: 20 * time.Second}
	token, heat, err := b.heatAuth(c)
	if err != nil {
		return "", 0, err
	}
	get := func(path string, v any) error {
		req, _ := http.NewRequest("GET", strings.TrimSuffix(heat, "/")+path, nil)
		req.Header.Set("X-Auth-Token", token)
		r, err := c.Do(req)
		if err != nil {
			return err
		}
		defer r.Body.Close()
		if r.StatusCode != http.StatusOK {
			return fmt.Errorf("heat GET %s: %s", path, r.Status)
		}
		return json.NewDecoder(r.Body).Decode(v)
	}
	name := b.env["HEATSIBLE_STACK"]
	var st struct {
		Stack struct {
			StackStatus string `json:"stack_status"`
		}
	}
	if err := get("/stacks/"+name, &st); err != nil {
		return "", 0, err
	}
	var res struct {
		Resources []struct {
			ResourceType string `json:"resource_type"`
		}
	}
	if err := get("/stacks/"+name+"/resources?nested_depth=3", &res); err != nil {
		return "", 0, err
	}
	for _, r := range res.Resources {
		if r.ResourceType == "OS::Nova::Server" {
			servers++
		}
	}
	return st.Stack.StackStatus, servers, nil
}

// heatSeen is the stack's server count at the guard's first look: tests
// that scale the stack put it back to that.
var heatSeen struct {
	sync.Mutex
	servers int
}

// checkHeat: the bed's stack is complete and has the servers it had when
// this go test run began. Nothing here can put it right (testbed/bin/bed
// up with the bed's knobs does), so it is reported, and the test that
// left it fails.
func (b *bed) checkHeat() []dirt {
	status, servers, err := b.heatStack()
	if err != nil {
		return []dirt{{what: "the bed's Heat stack cannot be read: " + err.Error()}}
	}
	heatSeen.Lock()
	defer heatSeen.Unlock()
	var found []dirt
	if status != "CREATE_COMPLETE" && status != "UPDATE_COMPLETE" {
		found = append(found, dirt{what: fmt.Sprintf("the Heat stack %s is %s (bring it back with testbed/bin/bed up and the bed's knobs)", b.env["HEATSIBLE_STACK"], status)})
	}
	switch {
	case heatSeen.servers == 0:
		heatSeen.servers = servers
	case servers != heatSeen.servers:
		found = append(found, dirt{what: fmt.Sprintf("the Heat stack %s has %d servers, %d when this test run began", b.env["HEATSIBLE_STACK"], servers, heatSeen.servers)})
	}
	return found
}
