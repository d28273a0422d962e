// Package interrupt is how heatsible stops on a signal, the way k0sctl
// does: the first SIGINT, SIGTERM or SIGHUP cancels the run's context (the
// run stops Ansible, cleans up and exits 130); a second one exits at once,
// with 130, after saying what may be left behind and where.
//
// Whatever a run makes that its cleanup removes later (a local bundle, a
// staging directory on the Ansible host, a running ansible-playbook, the
// cluster lock) is registered with Track while it exists, so that the
// exit at once can name it, or, when that is instant and local, remove or
// stop it.
//
// Err is the one place where a cancelled run gets its exit code: once a
// signal has cancelled the context, the run's outcome is "interrupted"
// (130), whatever error the cancellation caused on its way (an SSH dial
// error, a Heat error, a failed task) and even when every step completed.
package interrupt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/heatsible/heatsible/internal/fail"
)

// Signals are the signals heatsible stops on: Ctrl-C, the SIGTERM of a VNF
// manager or of systemd, and SIGHUP (the terminal or SSH session that ran
// heatsible went away), which is handled like SIGTERM.
var Signals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}

// Name returns a signal's name as users know it ("SIGTERM").
func Name(s os.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP"
	case nil:
		return "a signal"
	}
	return s.String()
}

// Cause is the cause (context.Cause) of a context cancelled by a signal.
type Cause struct {
	Signal os.Signal
}

func (c *Cause) Error() string { return "interrupted by " + Name(c.Signal) }

// Interrupted is the error of a run whose context was cancelled: Err is
// what the run itself returned (nil when every step had completed), Signal
// the signal that cancelled it (nil when the context was cancelled
// otherwise).
type Interrupted struct {
	Signal os.Signal
	Err    error
}

func (e *Interrupted) Error() string {
	what := "interrupted"
	if e.Signal != nil {
		what += " by " + Name(e.Signal)
	}
	if e.Err == nil {
		return what + " after every step had completed (the recap says what was done)"
	}
	return what + ": " + e.Err.Error()
}

func (e *Interrupted) Unwrap() error { return e.Err }

// Err returns err as it should be reported: when ctx was cancelled (a
// signal, or the caller's cancel), an *Interrupted with exit code
// fail.Interrupted, whatever err is, also nil; otherwise err unchanged. A
// deadline that passed is not an interruption: err stays as it is.
func Err(ctx context.Context, err error) error {
	if !errors.Is(ctx.Err(), context.Canceled) {
		return err
	}
	var done *Interrupted
	if errors.As(err, &done) && fail.Code(err) == fail.Interrupted {
		return err // already decided (lcm.Run, then the CLI)
	}
	var c *Cause
	var sig os.Signal
	if errors.As(context.Cause(ctx), &c) {
		sig = c.Signal
	}
	return fail.With(fail.Interrupted, &Interrupted{Signal: sig, Err: err})
}

// Leftover is something a run made that its cleanup removes, registered
// with Track while it exists.
type Leftover struct {
	// What says, when heatsible exits at once, what is left behind, where,
	// and what removes it later (or how to remove it).
	What string
	// Now, if set, is done instead when heatsible exits at once: something
	// instant and local (kill a local process group, remove a local
	// directory). It returns the line to print ("removed: ...", "stopped:
	// ...", or "left behind: ..." when it could not), or "" to say nothing.
	Now func() string
}

// Config is how a Handler reports and exits.
type Config struct {
	// Stderr gets the messages (os.Stderr if nil).
	Stderr io.Writer
	// Exit ends the process (os.Exit if nil); tests replace it.
	Exit func(code int)
	// Signals are the signals to handle (Signals if nil).
	Signals []os.Signal
}

// Handler handles the signals of one heatsible process.
type Handler struct {
	stderr io.Writer
	exit   func(int)
	cancel context.CancelCauseFunc
	ch     chan os.Signal
	stop   chan struct{}
	done   chan struct{}
	json   atomic.Bool

	mu    sync.Mutex
	first os.Signal
	next  int
	items map[int]Leftover
	order []int
}

type handlerKey struct{}

// Notify starts handling signals: it returns a context that the first
// signal cancels (context.Cause is a *Cause) and the Handler; Stop ends it.
// Signals that the process was started with ignored are left ignored.
func Notify(parent context.Context, cfg Config) (context.Context, *Handler) {
	h := &Handler{
		stderr: cfg.Stderr, exit: cfg.Exit,
		ch: make(chan os.Signal, 4), stop: make(chan struct{}), done: make(chan struct{}),
		items: map[int]Leftover{},
	}
	if h.stderr == nil {
		h.stderr = os.Stderr
	}
	if h.exit == nil {
		h.exit = os.Exit
	}
	sigs := cfg.Signals
	if sigs == nil {
		sigs = Signals
	}
	ctx, cancel := context.WithCancelCause(context.WithValue(parent, handlerKey{}, h))
	h.cancel = cancel
	// A signal this process was started with ignored stays ignored
	// (nohup, a background job's SIGINT): Notify would enable it.
	var handled []os.Signal
	for _, s := range sigs {
		if !signal.Ignored(s) {
			handled = append(handled, s)
		}
	}
	if len(handled) > 0 {
		signal.Notify(h.ch, handled...)
	}
	go h.loop()
	return ctx, h
}

// Stop stops handling signals (they get their default action again) and
// releases the context.
func (h *Handler) Stop() {
	signal.Stop(h.ch)
	select {
	case <-h.stop:
	default:
		close(h.stop)
	}
	<-h.done
	h.cancel(nil)
}

// Signal returns the first signal received, or nil.
func (h *Handler) Signal() os.Signal {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.first
}

// SetJSON makes the exit at once also print its JSON error document (the
// CLI's -o json) on stderr.
func SetJSON(ctx context.Context, on bool) {
	if h, _ := ctx.Value(handlerKey{}).(*Handler); h != nil {
		h.json.Store(on)
	}
}

// Track registers l with the Handler of ctx (nothing happens without one)
// and returns the function to call once l is cleaned up.
func Track(ctx context.Context, l Leftover) (done func()) {
	h, _ := ctx.Value(handlerKey{}).(*Handler)
	if h == nil {
		return func() {}
	}
	h.mu.Lock()
	id := h.next
	h.next++
	h.items[id] = l
	h.order = append(h.order, id)
	h.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			h.mu.Lock()
			delete(h.items, id)
			h.mu.Unlock()
		})
	}
}

func (h *Handler) loop() {
	defer close(h.done)
	for {
		select {
		case <-h.stop:
			return
		case s := <-h.ch:
			h.mu.Lock()
			first := h.first == nil
			if first {
				h.first = s
			}
			h.mu.Unlock()
			if first {
				fmt.Fprintf(h.stderr, "heatsible: %s: stopping: a running Ansible is stopped and the run cleans up after itself, then heatsible exits 130. "+
					"A second Ctrl-C or signal exits at once and leaves that cleanup undone.\n", Name(s))
				h.cancel(&Cause{Signal: s})
				continue
			}
			h.exitNow(s)
			return
		}
	}
}

// exitNow is the second signal: do what is instant, say what is left, exit.
func (h *Handler) exitNow(s os.Signal) {
	h.mu.Lock()
	var items []Leftover
	for _, id := range slices.Backward(h.order) { // innermost first, as the cleanup would
		if l, ok := h.items[id]; ok {
			items = append(items, l)
		}
	}
	h.mu.Unlock()
	var lines []string
	for _, l := range items {
		line := l.What
		if l.Now != nil {
			line = l.Now()
		}
		if line != "" {
			lines = append(lines, line)
		}
	}
	msg := fmt.Sprintf("second %s: exited at once, without finishing the cleanup", Name(s))
	if len(lines) == 0 {
		msg += "; nothing was left behind"
	}
	if h.json.Load() {
		fmt.Fprintf(h.stderr, "heatsible: %s\n", msg)
		enc := json.NewEncoder(h.stderr)
		enc.SetIndent("", "  ")
		_ = enc.Encode(map[string]any{"ok": false, "exit_code": fail.Interrupted, "error": msg, "cleanup": lines})
	} else {
		fmt.Fprintf(h.stderr, "heatsible: %s (exit %d)", msg, fail.Interrupted)
		if len(lines) > 0 {
			fmt.Fprint(h.stderr, ":")
		}
		fmt.Fprintln(h.stderr)
		for _, l := range lines {
			fmt.Fprintf(h.stderr, "  %s\n", l)
		}
	}
	h.exit(fail.Interrupted)
}
