package lcm

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heatsible/heatsible/internal/fail"
)

// TestHeatErrorDoesNotWaitForTheDial: the connection to the Ansible host is
// opened while Heat is read; when Heat fails, the run reports that at once
// and gives the connection up (here a host that never answers, which the
// dial would otherwise wait on for its whole 30 s timeout), and the error is
// Heat's, as before the dial was moved.
func TestHeatErrorDoesNotWaitForTheDial(t *testing.T) {
	t.Setenv("HEATSIBLE_STATE_DIR", t.TempDir())
	kh := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(kh, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var dialed atomic.Int32
	addr := silentHost(t, func() { dialed.Add(1) })
	// Heat: "no such stack", once the dial has begun.
	fakeHeat(t, func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i < 100 && dialed.Load() == 0; i++ {
			time.Sleep(50 * time.Millisecond)
		}
		http.NotFound(w, r)
	})
	o := RunOptions{
		Operation: OpInstantiateEnd, Request: loadRequest(t, "ansible_kubespray"), PackageDir: "../../testdata/package",
		Source: Source{Stack: "k8s-a-stack"}, KnownHosts: kh, Version: "test",
		AnsibleHost: addr, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	began := time.Now()
	_, err := Run(ctx, o)
	took := time.Since(began)
	if code := fail.Code(err); code != fail.Discovery || !strings.Contains(err.Error(), "k8s-a-stack") {
		t.Fatalf("Run: exit %d (%v), want %d naming the stack", code, err, fail.Discovery)
	}
	if dialed.Load() == 0 {
		t.Fatal("the Ansible host was not dialled while Heat was read: the test proved nothing")
	}
	if took > 10*time.Second {
		t.Errorf("Run took %s: it waited for the dial instead of giving it up", took)
	}
	t.Logf("returned in %s", took.Round(time.Millisecond))
}
