package sqlite_test

import (
	"bytes"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/toolgate/toolgate/store/sqlite"
	_ "modernc.org/sqlite"
)

func TestVaults(t *testing.T) {
	ctx := t.Context()
	s := openAt(t, filepath.Join(t.TempDir(), "v.db"), nil)
	if got, err := s.LoadVault(ctx, "c1"); err != nil || got != nil {
		t.Fatalf("LoadVault of a conversation without a vault = %q, %v; want nil, nil", got, err)
	}
	for _, v := range [][]byte{[]byte("sealed-1"), {0, 1, 2, 255}, {}} {
		if err := s.SaveVault(ctx, "c1", v); err != nil {
			t.Fatal(err)
		}
		got, err := s.LoadVault(ctx, "c1")
		if err != nil || !bytes.Equal(got, v) || got == nil {
			t.Errorf("LoadVault = %v, %v; want %v", got, err, v)
		}
	}
	if got, _ := s.LoadVault(ctx, "c2"); got != nil {
		t.Errorf("another conversation sees vault %q", got)
	}
	if err := s.SaveVault(ctx, "", []byte("x")); err == nil {
		t.Error("SaveVault with an empty id succeeded")
	}
}

// TestUpgradeFromVersion1 opens a database written with schema version 1
// (no vaults table) and checks that it is upgraded without losing data.
func TestUpgradeFromVersion1(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`CREATE TABLE messages (conversation_id TEXT NOT NULL, seq INTEGER NOT NULL, format INTEGER NOT NULL, body TEXT NOT NULL, PRIMARY KEY (conversation_id, seq)) WITHOUT ROWID`,
		`CREATE TABLE pauses (conversation_id TEXT NOT NULL PRIMARY KEY, id TEXT NOT NULL, msg_index INTEGER NOT NULL, awaiting TEXT NOT NULL, claimed INTEGER NOT NULL DEFAULT 0, created_at INTEGER NOT NULL, created_at_nanos INTEGER NOT NULL) WITHOUT ROWID`,
		`INSERT INTO messages VALUES ('old', 0, 1, '{"role":"user","text":"kept"}')`,
		`PRAGMA user_version = 1`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	s, err := sqlite.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	conv, err := s.Load(t.Context(), "old")
	if err != nil || len(conv.Messages) != 1 {
		t.Fatalf("Load after upgrade: %v, %d messages", err, len(conv.Messages))
	}
	if err := s.SaveVault(t.Context(), "old", []byte("v")); err != nil {
		t.Errorf("vaults table missing after upgrade: %v", err)
	}
}
