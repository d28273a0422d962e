package state

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

func TestPrune(t *testing.T) {
	base := t.TempDir()
	for i := range 25 {
		if err := os.Mkdir(filepath.Join(base, fmt.Sprintf("202611%02dT090000Z-instantiate-end", i+1)), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(base, "notes"), 0o700); err != nil {
		t.Fatal(err)
	}
	prune(base, RecordsKept)
	entries, _ := os.ReadDir(base)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) != 21 || names[0] != "20261106T090000Z-instantiate-end" || names[19] != "20261125T090000Z-instantiate-end" || names[20] != "notes" {
		t.Errorf("after prune: %v", names)
	}
}
