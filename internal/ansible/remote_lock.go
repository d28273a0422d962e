package ansible

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/heatsible/heatsible/internal/fail"
	"github.com/heatsible/heatsible/internal/remote"
	"github.com/heatsible/heatsible/internal/topology"
)

// The cluster's lock on the Ansible host.
//
// Two heatsibles on two machines may work on the same cluster through the
// same Ansible host (two Tacker conductors, an operator and a hook). The
// lock on the calling machine cannot see the other one; the Ansible host
// sees both. So a remote run also holds the cluster's lock there, for the
// whole run: from before its first staging directory is made until its last
// one is removed, kubespray phases and inventory writes included.
//
// The lock is held by one SSH session on the run's connection, a shell that
// takes flock on LockDir/<cluster>.lock, writes the holder record into it,
// says "locked" and then waits on its stdin for commands (make or remove a
// staging directory, release). heatsible releases it at the end; a dropped
// connection ends the session and the kernel frees the flock. The same
// session creates each staging directory and holds a second flock on it
// (the directory itself) for as long as it exists, so CleanupStale never
// takes a live run's directory, not even while its bundle is uploading.
//
// Holder records follow the local lock's rule (internal/state/lock.go): a
// release empties the file; a free lock whose file still names a holder was
// left by a run that did not finish (heatsible killed, or the connection
// lost), and the next operation is refused until --break-lock. heatsible
// empties its own record itself, over a new connection, when it survived
// the loss of its connection (ClearRecord): a run that ended and said so is
// not a stale one.
//
// A host without flock(1) (util-linux, Essential on Debian and Ubuntu, in
// busybox too) cannot hold the lock: the run is refused, saying so. Falling
// back to the local lock alone would silently drop the guarantee across
// machines; a mkdir lock would outlive a dropped connection.

// Holder says who holds a cluster's lock. Its JSON is the lock file's
// content, here and on the Ansible host.
type Holder struct {
	Operation string    `json:"operation"`
	PID       int       `json:"pid"`
	Host      string    `json:"host"`
	Started   time.Time `json:"started"`
	// Record is the holder's run record on its machine (Host), when known.
	Record string `json:"record,omitempty"`
}

func (h Holder) String() string {
	return fmt.Sprintf("%s (pid %d on %s, started %s)", h.Operation, h.PID, h.Host, h.Started.Format(time.RFC3339))
}

// Errors of Lock, wrapped by a *LockError that says it all, with their exit
// codes (package fail): a lock refused is Refused, a lock lost Unreachable.
var (
	// ErrLockBusy: another run holds the cluster's lock.
	ErrLockBusy = fail.Sentinel(fail.Refused, "cluster lock busy")
	// ErrLockStale: the lock is free but names a run that did not finish.
	ErrLockStale = fail.Sentinel(fail.Refused, "cluster lock left by a run that did not finish")
	// ErrNoFlock: the Ansible host has no flock(1).
	ErrNoFlock = fail.Sentinel(fail.Refused, "no flock on the Ansible host")
	// ErrLockLost: the session holding the lock ended before the run
	// released it (the connection dropped, or the shell was killed).
	ErrLockLost = fail.Sentinel(fail.Unreachable, "lost the cluster's lock on the Ansible host")
)

// LockError is a refused lock, in words an operator can act on.
type LockError struct {
	Kind error
	msg  string
}

func (e *LockError) Error() string { return e.msg }
func (e *LockError) Unwrap() error { return e.Kind }

// lockReplyTimeout bounds each exchange with the lock session (taking it,
// making or removing a staging directory, releasing).
const lockReplyTimeout = 60 * time.Second

// orphanWait is how long a lock session whose heatsible went away waits for
// the run's ansible-playbook (which holds its staging marker) to stop
// before it lets the lock go: the Ansible host's watchdog (remoteScript)
// stops it within watchdogGrace seconds of noticing.
const orphanWait = 3 * watchdogGrace * time.Second

// RemoteLock is the cluster's lock held on the Ansible host.
type RemoteLock struct {
	rr      *RemoteRunner
	cluster string
	holder  Holder
	// Path is the lock file on the Ansible host.
	Path string

	mu       sync.Mutex // one exchange at a time
	sess     *remote.Session
	stage    string
	released bool

	// ansibles is what the lock session found of RemoteRunner.Ansibles.
	ansibles []AnsibleFound
	// peeked are the files of RemoteRunner.Peek that exist, by path.
	peeked map[string][]byte
}

// Peeked are the files of RemoteRunner.Peek the lock session found, by
// path (a missing file is not there).
func (l *RemoteLock) Peeked() map[string][]byte { return l.peeked }

// MaxPeek is the largest file RemoteRunner.Peek reads.
const MaxPeek = 1 << 20

// peekScript prints "peek I -" for a missing file I of paths, else "peek I
// BASE64" (at most MaxPeek bytes), "peek I big" or "peek I unreadable".
func peekScript(paths []string) string {
	var sb strings.Builder
	for i, p := range paths {
		fmt.Fprintf(&sb, `f=%s
if [ ! -e "$f" ]; then echo 'peek %d -'
elif [ ! -f "$f" ] || [ ! -r "$f" ]; then echo 'peek %d unreadable'
elif [ "$(wc -c < "$f")" -gt %d ]; then echo 'peek %d big'
else printf 'peek %d %%s
' "$(base64 < "$f" | tr -d '
')"; fi
`, shellExpr(p), i, i, MaxPeek, i, i)
	}
	return sb.String()
}

// parsePeek reads the "peek I ..." answers.
func parsePeek(paths []string, lines []string) (map[string][]byte, error) {
	out := map[string][]byte{}
	seen := 0
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) != 3 || f[0] != "peek" {
			continue
		}
		i, err := strconv.Atoi(f[1])
		if err != nil || i < 0 || i >= len(paths) {
			return nil, fmt.Errorf("reading files: unexpected answer %q", l)
		}
		seen++
		switch f[2] {
		case "-":
		case "unreadable", "big":
			return nil, fmt.Errorf("reading %s: it is %s (a regular file this user reads, at most %d bytes, was expected)", paths[i], map[string]string{"unreadable": "not a readable regular file", "big": "too big"}[f[2]], MaxPeek)
		default:
			b, err := base64.StdEncoding.DecodeString(f[2])
			if err != nil {
				return nil, fmt.Errorf("reading %s: %w", paths[i], err)
			}
			out[paths[i]] = b
		}
	}
	if seen != len(paths) {
		return nil, fmt.Errorf("reading files: %d answer(s) for %d file(s)", seen, len(paths))
	}
	return out, nil
}

// Ansibles are the ansible-playbooks the lock session found on the Ansible
// host for RemoteRunner.Ansibles, in that order (see CheckAnsible).
func (l *RemoteLock) Ansibles() []AnsibleFound { return l.ansibles }

// LockName is the lock file's name for cluster (the local lock's too).
func LockName(cluster string) string {
	if n := topology.SanitizeName(cluster); n != "" {
		return n + ".lock"
	}
	return "cluster.lock"
}

// lockDir is where the locks live on the Ansible host: beside BaseDir
// ("~/.heatsible/locks" by default).
func (rr *RemoteRunner) lockDir() string {
	return path.Join(path.Dir(rr.base()), "locks")
}

// shellExpr quotes a remote path for the shell, "~/" meaning the login's
// home.
func shellExpr(p string) string {
	if p == "~" {
		return `"$HOME"`
	}
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		return `"$HOME"/` + remote.ShellQuote(rest)
	}
	return remote.ShellQuote(p)
}

// Lock takes the cluster's lock on the Ansible host for holder, without
// waiting, and keeps it until Release (or the connection's end). A live
// holder is refused (ErrLockBusy, naming it); a record left by a run that
// did not finish is refused (ErrLockStale) unless breakStale, which never
// takes the lock from a live holder. While the lock is held, Run stages its
// bundles through it.
func (rr *RemoteRunner) Lock(ctx context.Context, cluster string, holder Holder, breakStale bool) (*RemoteLock, error) {
	if rr.Client == nil {
		return nil, errors.New("locking the cluster on the Ansible host: no ssh client")
	}
	if rr.lock != nil {
		return nil, fmt.Errorf("locking cluster %s: this runner already holds the lock of %s", cluster, rr.lock.cluster)
	}
	if strings.ContainsAny(rr.base(), "\n\x00") {
		return nil, fmt.Errorf("staging base %q: want a path without newlines", rr.base())
	}
	c := rr.Client
	rec, err := json.Marshal(holder)
	if err != nil {
		return nil, err
	}
	probe, err := probeScript(rr.Ansibles)
	if err != nil {
		return nil, err
	}
	sess, err := c.Start(ctx, probe+peekScript(rr.Peek)+rr.lockScript(cluster, string(rec), breakStale))
	if err != nil {
		return nil, fmt.Errorf("locking cluster %s on the Ansible host %s: %w", cluster, c.Address(), err)
	}
	l := &RemoteLock{rr: rr, cluster: cluster, holder: holder, sess: sess}
	rctx, cancel := context.WithTimeout(ctx, lockReplyTimeout)
	defer cancel()
	fail := func(err error) (*RemoteLock, error) {
		// Given up (a cancel, a timeout) after the script may have taken
		// the lock: "release" empties the record it wrote, so no stale
		// one is left. A script that refused has ended and reads nothing.
		_ = sess.Send("release")
		cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer ccancel()
		_, _ = sess.Close(cctx)
		return nil, err
	}
	where := "the Ansible host " + c.Address()
	var probed []string
	for {
		line, err := sess.ReadLine(rctx)
		if err != nil {
			return fail(fmt.Errorf("locking cluster %s on %s: %w", cluster, where, err))
		}
		word, rest, _ := strings.Cut(line, " ")
		switch word {
		case "ansible", "peek":
			probed = append(probed, line)
		case "path":
			l.Path = rest
		case "broke":
			rr.log().Warn("breaking the lock of a run that did not finish (--break-lock)", "cluster", cluster, "host", c.Address(), "lock", l.Path, "holder", describeRecord(rest))
		case "locked":
			if l.ansibles, err = parseProbe(rr.Ansibles, probed); err != nil {
				return fail(fmt.Errorf("on %s: %w", where, err))
			}
			if l.peeked, err = parsePeek(rr.Peek, probed); err != nil {
				return fail(fmt.Errorf("on %s: %w", where, err))
			}
			rr.lock = l
			return l, nil
		case "busy":
			h, ok := parseRecord(rest)
			if !ok {
				return fail(&LockError{ErrLockBusy, fmt.Sprintf("cluster %s is busy: another heatsible holds its lock on %s (%s); wait for it to finish", cluster, where, l.Path)})
			}
			return fail(&LockError{ErrLockBusy, fmt.Sprintf("cluster %s is busy: %s holds its lock on %s (%s); wait for it to finish", cluster, h, where, l.Path)})
		case "stale":
			h, ok := parseRecord(rest)
			rec := "under HEATSIBLE_STATE_DIR/runs/" + topology.SanitizeName(cluster) + " on the machine that ran it"
			if ok && h.Record != "" {
				rec = h.Record + " on " + h.Host
			} else if ok {
				rec = "under HEATSIBLE_STATE_DIR/runs/" + topology.SanitizeName(cluster) + " on " + h.Host
			}
			return fail(&LockError{ErrLockStale, fmt.Sprintf("cluster %s: the lock on %s (%s) was left by a run that did not finish: %s; it was killed or crashed, or lost its connection to the Ansible host, so its hosts may be half-configured. Read its run record (%s), then re-run with --break-lock",
				cluster, where, l.Path, describeRecord(rest), rec)})
		case "noflock":
			return fail(&LockError{ErrNoFlock, fmt.Sprintf("%s has no flock (util-linux): heatsible holds cluster %s's lock there with it, so that two machines never run operations on the cluster at once; install util-linux on the Ansible host, or run with --local (which locks this machine only)", where, cluster)})
		case "notfile":
			return fail(&LockError{ErrLockBusy, fmt.Sprintf("cluster %s: its lock %s on %s is not a regular file; make sure no heatsible is running on the cluster, remove it, and re-run", cluster, l.Path, where)})
		default:
			return fail(fmt.Errorf("locking cluster %s on %s: unexpected answer %q", cluster, where, line))
		}
	}
}

// lockScript is the lock session's shell (see Lock and the comment at the
// top of this file), after the probe of RemoteRunner.Ansibles ("ansible
// FOR {json}" lines, see probe.go): it answers "path P", then "locked" (maybe after
// "broke RECORD") or one of "busy RECORD", "stale RECORD", "noflock",
// "notfile", and while it holds the lock it takes "mkstage PREFIX"
// ("stage DIR"), "rmstage" ("ok"), "release" and "remove" on its stdin.
func (rr *RemoteRunner) lockScript(cluster, record string, breakStale bool) string {
	brk := "0"
	if breakStale {
		brk = "1"
	}
	marker := MarkerFile
	return `set -u
umask 077
locks=` + shellExpr(rr.lockDir()) + `
f="$locks"/` + remote.ShellQuote(LockName(cluster)) + `
base=` + shellExpr(rr.base()) + `
holder=` + remote.ShellQuote(record) + `
brk=` + brk + `
record() { head -c 4096 -- "$f" | tr -d '\n\r'; echo; }
if ! command -v flock >/dev/null 2>&1; then echo noflock; exit 0; fi
mkdir -p -- "$locks" || exit 1
echo "path $f"
if [ -L "$f" ] || { [ -e "$f" ] && [ ! -f "$f" ]; }; then echo notfile; exit 0; fi
exec 9<>"$f" || exit 1
if ! flock -n 9; then printf 'busy '; record; exit 0; fi
if [ -s "$f" ]; then
  if [ "$brk" != 1 ]; then printf 'stale '; record; exit 0; fi
  printf 'broke '; record
fi
printf '%s\n' "$holder" >"$f" || exit 1
echo locked
stage=
while IFS= read -r cmd; do
  case $cmd in
  release) : >"$f"; exit 0 ;;
  remove) rm -f -- "$f"; exit 0 ;;
  'mkstage '*)
    name=${cmd#mkstage }
    case $name in ''|.*|*[!A-Za-z0-9_.-]*) echo 'error bad staging name'; continue ;; esac
    exec 8<&-
    stage=
    if ! d=$(mkdir -p -- "$base" && mktemp -d "$base/${name}XXXXXXXX"); then echo 'error mktemp failed'; continue; fi
    case $d in /*) ;; *) echo "error mktemp printed $d"; continue ;; esac
    if ! { command exec 8<"$d"; } 2>/dev/null || ! flock -n 8; then rm -rf -- "$d"; echo 'error cannot lock the staging directory'; continue; fi
    stage=$d
    echo "stage $d" ;;
  rmstage)
    if [ -n "$stage" ] && ! rm -rf -- "$stage"; then echo 'error rm failed'; continue; fi
    exec 8<&-
    stage=
    echo ok ;;
  *) echo 'error unknown command' ;;
  esac
done
# Stdin ended without "release": heatsible is gone, or its connection is.
# The holder record stays (a run that did not finish). The run's
# ansible-playbook may still be stopping (it holds its marker): the lock
# outlives it, bounded, and then its staging directory goes.
if [ -n "$stage" ]; then
  m="$stage/` + marker + `"
  if [ -f "$m" ] && [ ! -L "$m" ]; then
    flock -w ` + fmt.Sprint(int(orphanWait/time.Second)) + ` "$m" rm -rf -- "$stage"
  else
    rm -rf -- "$stage"
  fi
fi
exit 0
`
}

func parseRecord(s string) (Holder, bool) {
	var h Holder
	if json.Unmarshal([]byte(s), &h) != nil || h.PID == 0 {
		return h, false
	}
	return h, true
}

func describeRecord(s string) string {
	if h, ok := parseRecord(s); ok {
		return h.String()
	}
	return "an unreadable holder record"
}

// Lost is closed when the session holding the lock has ended, released or
// not.
func (l *RemoteLock) Lost() <-chan struct{} { return l.sess.Done() }

// Holder is who the lock names.
func (l *RemoteLock) Holder() Holder { return l.holder }

// exchange sends one command and reads its one-line answer.
func (l *RemoteLock) exchange(ctx context.Context, cmd string) (string, error) {
	if l.released {
		return "", fmt.Errorf("%w: already released", ErrLockLost)
	}
	ctx, cancel := context.WithTimeout(ctx, lockReplyTimeout)
	defer cancel()
	if err := l.sess.Send(cmd); err != nil {
		return "", fmt.Errorf("%w (%s): %w", ErrLockLost, l.rr.Client.Address(), err)
	}
	line, err := l.sess.ReadLine(ctx)
	if errors.Is(err, remote.ErrSessionEnded) {
		return "", fmt.Errorf("%w (%s): %w", ErrLockLost, l.rr.Client.Address(), err)
	}
	if err != nil {
		return "", err
	}
	if msg, ok := strings.CutPrefix(line, "error "); ok {
		return "", errors.New(msg)
	}
	return line, nil
}

// mkstage creates a staging directory named prefix+random under BaseDir,
// held by the lock session until rmstage.
func (l *RemoteLock) mkstage(ctx context.Context, prefix string) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	line, err := l.exchange(ctx, "mkstage "+prefix)
	if err != nil {
		return "", err
	}
	dir, ok := strings.CutPrefix(line, "stage ")
	if !ok || !path.IsAbs(dir) || path.Clean(dir) != dir || !strings.HasPrefix(path.Base(dir), prefix) {
		return "", fmt.Errorf("unexpected answer %q", line)
	}
	l.stage = dir
	return dir, nil
}

// rmstage removes the staging directory mkstage made.
func (l *RemoteLock) rmstage(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stage == "" {
		return nil
	}
	if _, err := l.exchange(ctx, "rmstage"); err != nil {
		return err
	}
	l.stage = ""
	return nil
}

// Release empties the holder record and lets the lock go. It returns an
// error wrapping ErrLockLost when the session had ended already (see
// ClearRecord).
func (l *RemoteLock) Release(ctx context.Context) error { return l.end(ctx, "release") }

// Remove deletes the lock file and lets the lock go: terminate-end, when
// the cluster is gone (as the local lock's Remove).
func (l *RemoteLock) Remove(ctx context.Context) error { return l.end(ctx, "remove") }

func (l *RemoteLock) end(ctx context.Context, cmd string) error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released {
		return nil
	}
	l.released = true
	if l.rr.lock == l {
		l.rr.lock = nil
	}
	err := l.sess.Send(cmd)
	ctx, cancel := context.WithTimeout(ctx, lockReplyTimeout)
	defer cancel()
	code, cerr := l.sess.Close(ctx)
	switch {
	case err != nil:
		return fmt.Errorf("%w (%s): %w", ErrLockLost, l.rr.Client.Address(), err)
	case cerr != nil:
		return fmt.Errorf("releasing the cluster's lock on %s: %w", l.rr.Client.Address(), cerr)
	case code != 0:
		return fmt.Errorf("releasing the cluster's lock on %s: exit %d: %s", l.rr.Client.Address(), code, strings.TrimSpace(l.sess.Stderr()))
	}
	return nil
}

// ClearRecord empties the cluster's lock record on the Ansible host if it
// still names holder: what Release would have done, for a run whose
// connection (and so its lock session) was lost but which itself went on
// and reported it. It waits, bounded, for the old session to let the lock
// go (it waits for the run's ansible-playbook to stop first). It reports
// whether the record was cleared; false with a nil error when another run
// holds the lock or the record names someone else.
func (rr *RemoteRunner) ClearRecord(ctx context.Context, cluster string, holder Holder) (bool, error) {
	rec, err := json.Marshal(holder)
	if err != nil {
		return false, err
	}
	out, err := rr.Client.Output(ctx, rr.clearScript(cluster, string(rec)))
	if err != nil {
		return false, fmt.Errorf("clearing this run's lock record on %s: %w", rr.Client.Address(), err)
	}
	switch out {
	case "cleared":
		return true, nil
	case "busy":
		return false, fmt.Errorf("the lost session still held the lock on %s after %d s", rr.Client.Address(), int(orphanWait/time.Second)+30)
	case "noflock":
		return false, fmt.Errorf("clearing this run's lock record on %s: %w", rr.Client.Address(), ErrNoFlock)
	}
	return false, nil
}

// clearScript empties the lock file of cluster if it holds record, once
// it can take the lock (see ClearRecord).
func (rr *RemoteRunner) clearScript(cluster, record string) string {
	return `f=` + shellExpr(rr.lockDir()) + `/` + remote.ShellQuote(LockName(cluster)) + `
holder=` + remote.ShellQuote(record) + `
command -v flock >/dev/null 2>&1 || { echo noflock; exit 0; }
if [ ! -f "$f" ] || [ -L "$f" ]; then echo gone; exit 0; fi
exec 9<>"$f" || exit 1
flock -w ` + fmt.Sprint(int(orphanWait/time.Second)+30) + ` 9 || { echo busy; exit 0; }
if [ "$(head -c 4096 -- "$f" | tr -d '\n\r')" = "$holder" ]; then : >"$f"; echo cleared; else echo other; fi
`
}

// thisHolder is the holder record of a lock Run takes for itself.
func thisHolder(op string) Holder {
	host, _ := os.Hostname()
	return Holder{Operation: op, PID: os.Getpid(), Host: host, Started: time.Now().UTC()}
}
