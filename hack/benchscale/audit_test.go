package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAuditFilesReadsRotatedBackupsOldestFirst(t *testing.T) {
	dir := t.TempDir()
	names := []string{"audit.log", "audit-2026-11-25T14-40-00.000.log", "audit-2026-11-25T14-30-00.000.log", "other.log"}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := auditFiles(filepath.Join(dir, "audit.log"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		filepath.Join(dir, "audit-2026-11-25T14-30-00.000.log"),
		filepath.Join(dir, "audit-2026-11-25T14-40-00.000.log"),
		filepath.Join(dir, "audit.log"),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
