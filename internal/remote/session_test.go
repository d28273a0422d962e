package remote_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heatsible/heatsible/internal/remote"
	"github.com/heatsible/heatsible/internal/remote/remotetest"
)

// TestSession: a command talked to in lines, that ends on its own, on the
// end of its stdin, or with the connection.
func TestSession(t *testing.T) {
	srv := remotetest.Start(t)
	c := dial(t, srv)
	ctx := context.Background()
	// An echo server that says goodbye on EOF into a file (stdout is gone
	// by then when the connection is).
	bye := filepath.Join(t.TempDir(), "bye")
	script := `echo ready
while IFS= read -r l; do
  case $l in quit) exit 3 ;; esac
  printf 'got %s\n' "$l"
done
echo eof > ` + remote.ShellQuote(bye) + `
exit 0`

	s, err := c.Start(ctx, script)
	if err != nil {
		t.Fatal(err)
	}
	if l, err := s.ReadLine(ctx); l != "ready" || err != nil {
		t.Fatalf("first line %q, %v", l, err)
	}
	for _, in := range []string{"a b", "it's \"quoted\""} {
		if err := s.Send(in); err != nil {
			t.Fatal(err)
		}
		if l, err := s.ReadLine(ctx); l != "got "+in || err != nil {
			t.Errorf("answer to %q: %q, %v", in, l, err)
		}
	}
	// Ended by the command: its exit code, and ErrSessionEnded after.
	if err := s.Send("quit"); err != nil {
		t.Fatal(err)
	}
	if code, err := s.Wait(ctx); code != 3 || err != nil {
		t.Errorf("Wait = %d, %v; want 3", code, err)
	}
	if _, err := s.ReadLine(ctx); !errors.Is(err, remote.ErrSessionEnded) || !strings.Contains(err.Error(), "exit 3") {
		t.Errorf("ReadLine after the end: %v", err)
	}
	if err := s.Send("x"); !errors.Is(err, remote.ErrSessionEnded) {
		t.Errorf("Send after the end: %v", err)
	}

	// Ended by Close: the command sees its stdin end.
	s, err = c.Start(ctx, script)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReadLine(ctx); err != nil {
		t.Fatal(err)
	}
	if code, err := s.Close(ctx); code != 0 || err != nil {
		t.Errorf("Close = %d, %v", code, err)
	}
	if b, _ := os.ReadFile(bye); string(b) != "eof\n" {
		t.Errorf("the command did not see its stdin end: %q", b)
	}
	if err := os.Remove(bye); err != nil {
		t.Fatal(err)
	}

	// Ended with the connection: Done closes, the error says unreachable,
	// and the remote command too sees its stdin end.
	s, err = c.Start(ctx, script)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReadLine(ctx); err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
	select {
	case <-s.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done not closed 10 s after the connection was")
	}
	if _, err := s.ReadLine(ctx); !errors.Is(err, remote.ErrSessionEnded) || !errors.Is(err, remote.ErrUnreachable) {
		t.Errorf("ReadLine after the connection's end: %v, want ErrSessionEnded and ErrUnreachable", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if b, _ := os.ReadFile(bye); string(b) == "eof\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the remote command did not see its stdin end 10 s after the connection's")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
