package interrupt

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/heatsible/heatsible/internal/fail"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestErr(t *testing.T) {
	sshErr := fail.With(fail.Unreachable, errors.New("connecting to the Ansible host: ssh host unreachable"))
	cancelled, cancel := context.WithCancelCause(context.Background())
	cancel(&Cause{Signal: syscall.SIGHUP})
	plain, cancelPlain := context.WithCancel(context.Background())
	cancelPlain()
	expired, cancelExpired := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancelExpired()
	tests := []struct {
		name string
		ctx  context.Context
		err  error
		code int
		msg  string
	}{
		{"not cancelled, error", context.Background(), sshErr, fail.Unreachable, "connecting to the Ansible host: ssh host unreachable"},
		{"not cancelled, ok", context.Background(), nil, fail.OK, ""},
		{"signal wins over the error", cancelled, sshErr, fail.Interrupted, "interrupted by SIGHUP: connecting to the Ansible host: ssh host unreachable"},
		{"signal wins over success", cancelled, nil, fail.Interrupted, "interrupted by SIGHUP after every step had completed (the recap says what was done)"},
		{"cancelled without a signal", plain, sshErr, fail.Interrupted, "interrupted: connecting to the Ansible host"},
		{"a deadline is not an interruption", expired, sshErr, fail.Unreachable, "connecting to the Ansible host"},
		{"decided once", cancelled, Err(cancelled, sshErr), fail.Interrupted, "interrupted by SIGHUP: connecting"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Err(tc.ctx, tc.err)
			if code := fail.Code(err); code != tc.code {
				t.Errorf("code %d, want %d (%v)", code, tc.code, err)
			}
			if tc.msg == "" {
				if err != nil {
					t.Errorf("error %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tc.msg) {
				t.Errorf("error %q, want it to start with %q", err, tc.msg)
			}
			if strings.Count(err.Error(), "interrupted") > 1 {
				t.Errorf("error %q says interrupted twice", err)
			}
			if tc.err != nil && !errors.Is(err, tc.err) {
				t.Errorf("error %v does not wrap %v", err, tc.err)
			}
		})
	}
}

// TestHandler sends real signals to this process: the first of SIGINT,
// SIGTERM or SIGHUP cancels the context with its cause; a second one does
// what is instant, says what is left (innermost first, what is done
// excluded), and exits 130.
func TestHandler(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		for _, asJSON := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/json=%v", Name(sig), asJSON), func(t *testing.T) {
				if signal.Ignored(sig) {
					t.Skipf("%s is ignored where this test runs (nohup, or a background job's SIGINT): heatsible keeps a signal it was started with ignored, so its handling cannot be tested here", Name(sig))
				}
				var errb syncBuffer
				exits := make(chan int, 1)
				ctx, h := Notify(context.Background(), Config{Stderr: &errb, Exit: func(c int) { exits <- c }})
				defer h.Stop()
				SetJSON(ctx, asJSON)
				lock := Track(ctx, Leftover{What: "left behind: the lock"})
				defer lock()
				removed := false
				bundle := Track(ctx, Leftover{Now: func() string { removed = true; return "removed: the bundle" }})
				defer bundle()
				done := Track(ctx, Leftover{What: "left behind: something already cleaned up"})
				done()
				inner := Track(ctx, Leftover{What: "left behind: the staging directory"})
				defer inner()

				if err := syscall.Kill(os.Getpid(), sig); err != nil {
					t.Fatal(err)
				}
				select {
				case <-ctx.Done():
				case <-time.After(10 * time.Second):
					t.Fatal("the first signal did not cancel the context")
				}
				var c *Cause
				if !errors.As(context.Cause(ctx), &c) || c.Signal != sig || h.Signal() != sig {
					t.Errorf("cause %v, signal %v; want %s", context.Cause(ctx), h.Signal(), Name(sig))
				}
				if want := "heatsible: " + Name(sig) + ": stopping:"; !strings.Contains(errb.String(), want) {
					t.Errorf("stderr %q lacks %q", errb.String(), want)
				}
				select {
				case code := <-exits:
					t.Fatalf("exit(%d) on the first signal", code)
				default:
				}

				if err := syscall.Kill(os.Getpid(), sig); err != nil {
					t.Fatal(err)
				}
				select {
				case code := <-exits:
					if code != fail.Interrupted {
						t.Errorf("exit(%d), want 130", code)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("the second signal did not exit")
				}
				if !removed {
					t.Error("the instant cleanup did not run")
				}
				out := errb.String()
				head := "heatsible: second " + Name(sig) + ": exited at once, without finishing the cleanup"
				if !strings.Contains(out, head) || strings.Contains(out, "already cleaned up") {
					t.Errorf("stderr:\n%s", out)
				}
				want := []string{"left behind: the staging directory", "removed: the bundle", "left behind: the lock"}
				if asJSON {
					var doc struct {
						OK       bool     `json:"ok"`
						ExitCode int      `json:"exit_code"`
						Error    string   `json:"error"`
						Cleanup  []string `json:"cleanup"`
					}
					i := strings.Index(out, "{")
					if i < 0 || json.Unmarshal([]byte(out[i:]), &doc) != nil {
						t.Fatalf("no JSON document on stderr:\n%s", out)
					}
					if doc.OK || doc.ExitCode != 130 || !strings.HasPrefix(head, "heatsible: "+doc.Error) || strings.Join(doc.Cleanup, "|") != strings.Join(want, "|") {
						t.Errorf("JSON document %+v", doc)
					}
					return
				}
				if !strings.Contains(out, "  "+strings.Join(want, "\n  ")+"\n") {
					t.Errorf("want, innermost first:\n  %s\ngot:\n%s", strings.Join(want, "\n  "), out)
				}
			})
		}
	}
}

// TestTrackWithoutHandler: without a handler, Track does nothing.
func TestTrackWithoutHandler(t *testing.T) {
	done := Track(context.Background(), Leftover{What: "x"})
	done()
	done()
}
