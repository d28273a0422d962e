package e2e

import (
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestDeadAptSource: a node with an apt source that answers 404 (the
// retired apt.kubernetes.io that Tacker's kubeadm script leaves on its
// nodes; a mirror an offline cloud cannot reach) still gets nfs-common:
// heatsible refreshes the lists as apt-get does, leaves the dead source
// out and says so, where the apt module's update (python-apt) failed the
// whole task. Then, with every source dead and no package list on the
// node (a cloud image without lists), the run fails (exit 4) naming the
// sources, not with apt's bare "No package matching".
//
// The bed stands for the dead repository with a tiny HTTP server on the
// machine's bridge address that answers 404 to everything, and a
// sources.list.d entry on the worker (`deb http://10.231.0.1:PORT/kubernetes-xenial
// kubernetes-xenial main`, reached directly: apt-cacher-ng refuses ports
// other than 80). For the second part the same server is the worker's
// proxy for deb.debian.org, so every source answers 404.
func TestDeadAptSource(t *testing.T) {
	b := needBed(t)
	const host = "worker-1"
	const list = "/etc/apt/sources.list.d/hs-e2e-dead.list"
	const conf = "/etc/apt/apt.conf.d/99hs-e2e-dead"
	ip := strings.Fields(b.exec(t, host, "hostname", "-I"))[0]
	node := b.nodeAt(t, ip)

	// Registered before anything changes: the worker as the bed made it
	// (no dead source, fresh lists, nfs-common installed).
	t.Cleanup(func() {
		if out, err := b.try(host, "sh", "-c", `rm -f `+list+` `+conf+`
export DEBIAN_FRONTEND=noninteractive NEEDRESTART_SUSPEND=1
apt-get -q update >/dev/null 2>&1
dpkg-query -W -f='${Status}' nfs-common 2>/dev/null | grep -q 'install ok installed' || apt-get install -y -q --no-install-recommends nfs-common >/dev/null`); err != nil {
			t.Errorf("putting %s back: %v\n%s", host, err, out)
		}
	})
	ln, err := net.Listen("tcp", "10.231.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	base := "http://10.231.0.1:" + port + "/kubernetes-xenial"

	b.exec(t, host, "sh", "-c", "echo 'deb "+base+" kubernetes-xenial main' > "+list+
		" && echo 'Acquire::http::Proxy::10.231.0.1 \"DIRECT\";' > "+conf)
	// The bed shows it: apt-get leaves the source out, python-apt raises.
	if out, _ := b.try(host, "apt-get", "-q", "update"); !strings.Contains(out, "Err:") || !strings.Contains(out, "404  Not Found") {
		t.Fatalf("the bed cannot show it: apt-get update on %s does not fail on %s:\n%s", host, base, out)
	}
	if out, err := b.try(host, "python3", "-c", "import apt; apt.Cache().update()"); err == nil || !strings.Contains(out, "FetchFailedException") {
		t.Fatalf("the bed cannot show it: python-apt's update does not raise on %s: %v\n%s", base, err, out)
	}
	// Stale lists (older than apt_cache_valid_time), so the run refreshes
	// them; nfs-common gone, so the run installs it.
	stale := "rm -f /var/lib/apt/periodic/update-success-stamp; touch -d '-2 hours' /var/lib/apt/lists"
	b.exec(t, host, "sh", "-c", stale)
	b.removeNFSClient(t, host)

	args := b.runArgs("--tags", "nfs_client")
	code, _, errs, took := b.heatsible(t, args...)
	warning := lineWith(errs, node+": apt-get update could not fetch")
	t.Logf("nfs_client with a dead apt source on %s: exit %d in %s\n%s", host, code, took.Round(time.Millisecond), warning)
	if code != 0 {
		t.Fatalf("exit %d, want 0\n%s", code, tail(errs, 30))
	}
	want := node + ": apt-get update could not fetch from 1 source(s), left out as apt-get leaves them out: " +
		base + " kubernetes-xenial Release (404 Not Found [IP: 10.231.0.1 " + port + "]); installing from the sources that answered ("
	if !strings.Contains(warning, want) {
		t.Errorf("the warning does not name the dead source: want %q in\n%s", want, tail(errs, 30))
	}
	if !b.nfsClient(host) {
		t.Errorf("%s has no NFS client after the run", host)
	}

	// Every source dead (the server is the proxy for deb.debian.org too)
	// and no package list on the node: exit 4, the sources named.
	b.exec(t, host, "sh", "-c", "echo 'Acquire::http::Proxy::deb.debian.org \"http://10.231.0.1:"+port+"\";' >> "+conf+
		" && find /var/lib/apt/lists -maxdepth 1 -type f ! -name lock -delete && apt-get clean && "+stale)
	b.removeNFSClient(t, host)
	code, _, errs, took = b.heatsible(t, args...)
	failure := lineWith(errs, "could not install nfs-common")
	t.Logf("nfs_client with every apt source dead on %s: exit %d in %s\n%s", host, code, took.Round(time.Millisecond), tail(errs, 12))
	if code != 4 {
		t.Fatalf("exit %d, want 4\n%s", code, tail(errs, 30))
	}
	for _, w := range []string{
		node + ": could not install nfs-common:",
		"apt-get update could not fetch from any of its ",
		// in the order apt-get reports them, which is the order its
		// parallel fetches end in: not fixed
		"so no package list was refreshed: ",
		base + " kubernetes-xenial Release (404 Not Found",
		"http://deb.debian.org/debian bookworm Release (404 Not Found",
	} {
		if !strings.Contains(errs, w) {
			t.Errorf("the failure does not say %q:\n%s\n%s", w, failure, tail(errs, 30))
		}
	}
}
