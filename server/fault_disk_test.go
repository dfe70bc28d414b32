package server_test

import (
	"database/sql"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/flightdemo"
	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/server"
	"github.com/toolgate/toolgate/store/sqlite"
)

// smallDisk mounts a tmpfs of size (such as "4m") for the test and
// returns its directory, unmounted when the test ends. Mounting needs
// root (CI runs the suite as root): elsewhere the test is skipped, saying
// why.
func smallDisk(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a full disk is made with a small tmpfs, and mounting one needs root")
	}
	dir, err := os.MkdirTemp("", "toolgate-disk")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size+",mode=0777", "tmpfs", dir).CombinedOutput(); err != nil {
		os.Remove(dir)
		if strings.Contains(string(out), "permission denied") || strings.Contains(string(out), "not permitted") {
			t.Skipf("mounting a tmpfs is not permitted here (%s): no full disk to test", strings.TrimSpace(string(out)))
		}
		t.Fatalf("mount -t tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() {
		// A process that still holds a file there (a server's child that
		// is exiting after its postmaster) makes umount fail with "target
		// is busy": the file system is then detached at once and freed
		// when the last file on it is closed (umount -l).
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			if lout, lerr := exec.Command("umount", "-l", dir).CombinedOutput(); lerr != nil {
				t.Errorf("umount %s: %v: %s; umount -l: %v: %s", dir, err, out, lerr, lout)
			} else {
				t.Logf("umount %s: %s; detached it with umount -l", dir, strings.TrimSpace(string(out)))
			}
		}
		os.Remove(dir)
	})
	return dir
}

// fill writes a file into dir until the file system is full.
func fill(t *testing.T, dir string) (path string) {
	t.Helper()
	path = filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	// The last pages a short write leaves.
	for {
		if _, err := f.Write(buf[:512]); err != nil {
			break
		}
	}
	return path
}

// TestFaultFullDiskSQLite fills the disk of the SQLite store (a small
// tmpfs) in the middle of a load of messages and decisions, at the claim
// of a decision or the append of a paused reply. The requests that need a
// write are answered 503 with Retry-After, not 500, and /readyz fails
// while the disk is full; nothing stored is damaged (the file passes
// PRAGMA integrity_check). Once space is freed everything proceeds: every
// request retried with its key gets its first outcome or is carried out
// now, and the invariants hold.
func TestFaultFullDiskSQLite(t *testing.T) {
	t.Parallel()
	for _, at := range []faultStep{atClaim, atPause} {
		t.Run(string(at), func(t *testing.T) {
			t.Parallel()
			dir := smallDisk(t, "8m")
			path := filepath.Join(dir, "toolgate.db")
			st, err := sqlite.Open(t.Context(), path, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			var filler string
			full := make(chan struct{})
			fs := &faultingStore{txStore: st, at: at, fault: func() {
				// An empty write-ahead log, so that the next commit needs
				// new space.
				checkpoint(t, path)
				filler = fill(t, dir)
				close(full)
			}}
			f := newFixtureWith(t, fs, flightdemo.Model(), func(c *server.Config) {
				c.Audit = st.AuditLog()
				c.TurnTimeout = 5 * time.Second
				c.ClaimLease = 2 * time.Second
			})
			l := &faultLoad{t: t, instances: []*fixture{f}, rs: mustRecords(t, st), log: st.AuditLog()}
			convs := l.conversations(8)
			fs.armed.Store(true)
			l.run(convs, 2)
			select {
			case <-full:
			default:
				t.Fatal("the load ended without meeting the full disk")
			}
			l.checkUnavailable("on a full disk")
			ready := httptest.NewRecorder()
			f.h.ServeHTTP(ready, httptest.NewRequest("GET", "/readyz", nil))
			if ready.Code != http.StatusServiceUnavailable {
				t.Errorf("/readyz on a full disk: %d %s, want 503", ready.Code, ready.Body)
			}
			integrity(t, path)

			if err := os.Remove(filler); err != nil {
				t.Fatal(err)
			}
			ready = httptest.NewRecorder()
			f.h.ServeHTTP(ready, httptest.NewRequest("GET", "/readyz", nil))
			if ready.Code != http.StatusOK {
				t.Errorf("/readyz once space is freed: %d %s, want 200", ready.Code, ready.Body)
			}
			l.check(convs, resolvedOutcome)
			integrity(t, path)
		})
	}
}

// checkpoint empties the write-ahead log of the SQLite file at path.
func checkpoint(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.ToSlash(path)+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		t.Fatal(err)
	}
}

// integrity checks the SQLite file at path with PRAGMA integrity_check.
func integrity(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.ToSlash(path)+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query("PRAGMA integrity_check")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var report []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		report = append(report, line)
	}
	if len(report) != 1 || report[0] != "ok" {
		t.Errorf("integrity_check of the store: %v, want ok", report)
	}
}

// TestFaultFullDiskPostgres fills the disk of a PostgreSQL server's data
// directory (a small tmpfs; the server is the test's own) in the middle of
// a load on two instances, at the claim of a decision. The requests that
// fail are answered 503 (SQLSTATE 53100, disk full), not 500; once space
// is freed every request retried with its key gets its first outcome or
// is carried out now, the recovery finishes the resumptions the full disk
// stopped after their claims, and the invariants hold.
func TestFaultFullDiskPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL server")
	}
	t.Parallel()
	dir := smallDisk(t, "96m")
	cl := pgtest.NewCluster(t, &pgtest.ClusterOptions{DataDir: dir})
	var filler string
	full := make(chan struct{})
	l, fs := pgDeployment(t, cl.URL(), atClaim, func() {
		filler = fill(t, dir)
		close(full)
	})
	// The writes after the disk is full must need new pages: PostgreSQL
	// fills the free space of the pages it has first (and its WAL
	// segments are allocated ahead), so a few decisions can all fit.
	// Thirty-two write far more than a relation's last pages hold.
	convs := l.conversations(32)
	fs.armed.Store(true)
	l.run(convs, 3)
	select {
	case <-full:
	default:
		t.Fatal("the load ended without meeting the full disk")
	}
	l.checkUnavailable("on a full disk")
	// /readyz is not checked: the write probe changes a row in place, in
	// pages and a log segment the server already has, and so passes
	// until a write needs new space (see docs/SERVICE.md).
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	l.check(convs, resolvedOutcome)
}
