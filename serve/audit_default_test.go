package serve_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/audit"
	auditsqlite "github.com/toolgate/toolgate/audit/sqlite"
	"github.com/toolgate/toolgate/internal/flightdemo"
	"github.com/toolgate/toolgate/records"
	"github.com/toolgate/toolgate/serve"
	"github.com/toolgate/toolgate/server"
)

// pauseOnce runs one turn of cfg's service that pauses, with audit
// records.
func pauseOnce(t *testing.T, cfg *server.Config) {
	t.Helper()
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	f := &fixture{t: t, h: srv, srv: srv}
	c := f.must(201, "POST", "/v1/conversations", exampleTravellerKey, `{}`)
	if out := f.must(200, "POST", "/v1/conversations/"+c["id"].(string)+"/messages", exampleTravellerKey, `{"input":"`+flightdemo.Input+`"}`); out["status"] != "paused" {
		t.Fatalf("turn: %v, want paused", out)
	}
}

// count returns the number of records of l.
func count(t *testing.T, l audit.Log) int {
	t.Helper()
	n := 0
	for _, err := range l.Records(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}

// TestBuildAuditInStore: without audit.sqlite the audit log is the
// store's own, in its database (one chain, written in the store's
// transactions), and no file beside the store is made; with it, the log
// is a file of its own.
func TestBuildAuditInStore(t *testing.T) {
	path := writeConfig(t, validConfig)
	dir := filepath.Dir(path)
	fc, err := serve.LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg, closeAll, err := serve.Build(context.Background(), fc, nil)
	if err != nil {
		t.Fatal(err)
	}
	tx, ok := cfg.Records.(records.Transactional)
	if !ok {
		t.Fatalf("records %T keep no audit log", cfg.Records)
	}
	if cfg.Audit != tx.AuditLog() {
		t.Errorf("audit log %T, want the store's own", cfg.Audit)
	}
	pauseOnce(t, cfg)
	if n := count(t, cfg.Audit); n == 0 {
		t.Error("the store's audit log holds no records after a pause")
	}
	if err := closeAll(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "toolgate.audit.db")); !os.IsNotExist(err) {
		t.Errorf("an audit file beside the store: %v, want none", err)
	}

	// An explicit file keeps the log apart.
	fc, err = serve.LoadConfig(writeConfig(t, strings.Replace(validConfig, "store:\n", "audit:\n\tsqlite: data/separate.audit.db\nstore:\n", 1)))
	if err != nil {
		t.Fatal(err)
	}
	cfg, closeAll, err = serve.Build(context.Background(), fc, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cfg.Audit.(*auditsqlite.Log); !ok || cfg.Audit == cfg.Records.(records.Transactional).AuditLog() {
		t.Errorf("audit log %T with audit.sqlite, want a file of its own", cfg.Audit)
	}
	pauseOnce(t, cfg)
	if n := count(t, cfg.Audit); n == 0 {
		t.Error("the audit file holds no records after a pause")
	}
	if err := closeAll(); err != nil {
		t.Fatal(err)
	}
}
