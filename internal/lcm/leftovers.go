package lcm

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/heatsible/heatsible/internal/ansible"
	"github.com/heatsible/heatsible/internal/interrupt"
	"github.com/heatsible/heatsible/internal/state"
)

// What a run leaves behind when it exits at once on a second signal (see
// package interrupt), and how the next run finds it.

// sweepBundles removes the local bundles of cluster that runs killed
// before their cleanup left in the temporary directory (their secrets
// file included). It runs before the lock is taken, so that a run refused
// for a stale lock sweeps them too; a live run's bundle is locked and
// stays (see ansible.SweepStale).
func sweepBundles(cluster string, stderr io.Writer, log *slog.Logger) {
	removed, err := ansible.SweepStale("", cluster)
	if err != nil {
		log.Warn("could not remove every run bundle left by a killed run", "cluster", cluster, "error", err)
	}
	if len(removed) > 0 && stderr != nil {
		fmt.Fprintf(stderr, "heatsible: removed %d run bundle(s) that a killed run of %s left on this machine: %s\n",
			len(removed), cluster, strings.Join(removed, ", "))
	}
}

// closeBundle returns the deferred cleanup of the local bundle b; until
// then an exit at once removes it (a local directory: instant).
func closeBundle(ctx context.Context, b *ansible.Bundle, cluster string) func() {
	done := interrupt.Track(ctx, interrupt.Leftover{Now: func() string {
		if err := b.Close(); err != nil {
			return fmt.Sprintf("left behind: the local run bundle %s, with the run's secrets (%s, mode 0600): %v; "+
				"the next run of cluster %s on this machine removes it", b.Dir, ansible.SecretsFile, err, cluster)
		}
		return "removed: the local run bundle " + b.Dir
	}})
	return func() {
		_ = b.Close()
		done()
	}
}

// trackLock says, on an exit at once, that the cluster lock still names
// this run: the run did not finish (Ansible may have been stopped half way,
// and on the Ansible host it may run on for a few seconds), so the next
// operation is refused until an operator says so with --break-lock.
func trackLock(ctx context.Context, l *state.Lock, cluster string) func() {
	return interrupt.Track(ctx, interrupt.Leftover{What: fmt.Sprintf("left behind: the cluster lock %s, naming this run: "+
		"the next operation on cluster %s is refused until it is re-run with --break-lock "+
		"(read the run record first: the hosts may be half-configured)", l.Path(), cluster)})
}

// trackRemoteLock registers the cluster's lock on the Ansible host: an exit
// at once skips its release, so the dropped connection frees the flock but
// its holder record stays, as with the local lock.
func trackRemoteLock(ctx context.Context, l *ansible.RemoteLock, host, cluster string) func() {
	return interrupt.Track(ctx, interrupt.Leftover{What: fmt.Sprintf("left behind: the cluster lock %s on the Ansible host %s, naming this run: "+
		"the next operation on cluster %s, from any machine, is refused until it is re-run with --break-lock", l.Path, host, cluster)})
}
