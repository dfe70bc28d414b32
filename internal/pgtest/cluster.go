package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Cluster is a PostgreSQL server of one test's own, for tests that stop,
// restart or starve the database and must not do so to the server other
// tests share: a fresh cluster (initdb) in a temporary directory, listening
// on a Unix socket only, with trust authentication. [NewCluster] starts it;
// it is stopped and deleted when the test ends.
type Cluster struct {
	tb   testing.TB
	bin  string // the directory of initdb, pg_ctl and postgres
	dir  string // socket, log; data unless ClusterOptions.DataDir
	data string
	user string // the user the server runs as; "": this process's
	opts string // the server's settings, for pg_ctl -o
	url  string
}

// ClusterOptions configure [NewCluster]; nil means all defaults.
type ClusterOptions struct {
	// DataDir, when set, is an empty directory (such as a small tmpfs)
	// that holds the cluster's data instead of the temporary directory.
	DataDir string
}

// Binaries returns the directory of PostgreSQL's server programs:
// TOOLGATE_PG_BIN, or the newest /usr/lib/postgresql/*/bin with an
// initdb; "" when there is none.
func Binaries() string {
	if d := os.Getenv("TOOLGATE_PG_BIN"); d != "" {
		return d
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	slices.SortFunc(found, func(a, b string) int {
		va, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(a))))
		vb, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(b))))
		return va - vb
	})
	if len(found) == 0 {
		return ""
	}
	return filepath.Dir(found[len(found)-1])
}

// NewCluster initialises and starts a cluster of tb's own. Without
// PostgreSQL's server programs tb is skipped, or fails when CI is set. As
// root the server runs as the user postgres (PostgreSQL refuses root).
func NewCluster(tb testing.TB, opts *ClusterOptions) *Cluster {
	tb.Helper()
	bin := Binaries()
	if bin == "" {
		if ci, _ := strconv.ParseBool(os.Getenv("CI")); ci {
			tb.Fatal("no PostgreSQL server programs (initdb) found, and CI is set: set TOOLGATE_PG_BIN or install PostgreSQL")
		}
		tb.Skip("no PostgreSQL server programs (initdb) found: skipping a test that needs a PostgreSQL server of its own (set TOOLGATE_PG_BIN)")
	}
	// A short path: the socket's must fit in 107 bytes.
	dir, err := os.MkdirTemp("", "tgpg")
	if err != nil {
		tb.Fatal(err)
	}
	c := &Cluster{tb: tb, bin: bin, dir: dir, data: filepath.Join(dir, "data")}
	if opts != nil && opts.DataDir != "" {
		c.data = filepath.Join(opts.DataDir, "data")
	}
	tb.Cleanup(c.destroy)
	if os.Geteuid() == 0 {
		c.user = "postgres"
		u, err := user.Lookup(c.user)
		if err != nil {
			tb.Fatalf("running as root, a PostgreSQL server needs the user postgres: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		for _, d := range []string{dir, filepath.Dir(c.data)} {
			if err := os.Chown(d, uid, gid); err != nil {
				tb.Fatal(err)
			}
		}
	}
	if out, err := c.run("initdb", "-D", c.data, "-U", "toolgate", "--auth=trust", "--no-sync", "--encoding=UTF8", "--locale=C"); err != nil {
		tb.Fatalf("initdb: %v\n%s", err, out)
	}
	c.opts = fmt.Sprintf("-c listen_addresses='' -k %s -c fsync=off -c shared_buffers=16MB -c max_connections=60 -c max_wal_size=64MB -c min_wal_size=32MB", dir)
	if out, err := c.run("pg_ctl", "start", "-D", c.data, "-l", c.log(), "-w", "-t", "60", "-o", c.opts); err != nil {
		tb.Fatalf("pg_ctl start: %v\n%s\n%s", err, out, c.logText())
	}
	c.url = fmt.Sprintf("postgres://toolgate@/postgres?host=%s&port=5432&sslmode=disable", dir)
	return c
}

// URL returns the connection string of the cluster's database postgres,
// as user toolgate.
func (c *Cluster) URL() string { return c.url }

// Dir returns the cluster's data directory.
func (c *Cluster) Dir() string { return c.data }

func (c *Cluster) log() string { return filepath.Join(c.dir, "server.log") }

func (c *Cluster) logText() string {
	b, _ := os.ReadFile(c.log())
	return string(b)
}

// run runs one of PostgreSQL's programs as the cluster's user.
func (c *Cluster) run(prog string, args ...string) ([]byte, error) {
	path := filepath.Join(c.bin, prog)
	var cmd *exec.Cmd
	if c.user != "" {
		cmd = exec.Command("runuser", append([]string{"-u", c.user, "--", path}, args...)...)
	} else {
		cmd = exec.Command(path, args...)
	}
	cmd.Dir = "/"
	return cmd.CombinedOutput()
}

// pids returns the postmaster's process id and those of its children
// (the backends and the server's own processes).
func (c *Cluster) pids() ([]int, error) {
	b, err := os.ReadFile(filepath.Join(c.data, "postmaster.pid"))
	if err != nil {
		return nil, fmt.Errorf("the postmaster's pid: %w", err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pm, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil {
		return nil, fmt.Errorf("postmaster.pid: %w", err)
	}
	pids := []int{pm}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, not ") ".
		_, rest, ok := strings.Cut(string(stat), ") ")
		if f := strings.Fields(rest); ok && len(f) > 1 && f[1] == strconv.Itoa(pm) {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// Stop stops the postmaster and every process of the server with SIGSTOP,
// the postmaster first, so that it starts no new ones: the database
// stalls, as a host that froze would, its sockets open but silent.
func (c *Cluster) Stop() { c.signal(syscall.SIGSTOP) }

// Cont resumes a server stopped by [Cluster.Stop] (SIGCONT).
func (c *Cluster) Cont() { c.signal(syscall.SIGCONT) }

func (c *Cluster) signal(sig syscall.Signal) {
	c.tb.Helper()
	kill := func(pid int) {
		if err := syscall.Kill(pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			c.tb.Fatalf("kill -%d %d: %v", sig, pid, err)
		}
	}
	pids, err := c.pids()
	if err != nil {
		c.tb.Fatal(err)
	}
	// The postmaster first: once it is stopped it forks no new backend, so
	// the children listed after it are all there are. (Listed before, a
	// backend forked for a new connection in between would go on serving.)
	// Stopped means in state T, not signalled: kill returns before the
	// signal is acted on, and a fork the postmaster is in completes first,
	// its child appearing after kill returned.
	kill(pids[0])
	if sig == syscall.SIGSTOP {
		c.waitStopped(pids[0])
	}
	if pids, err = c.pids(); err != nil {
		c.tb.Fatal(err)
	}
	for _, pid := range pids[1:] {
		kill(pid)
	}
	if sig == syscall.SIGSTOP {
		// The database stalls when Stop returns, not a moment later.
		for _, pid := range pids[1:] {
			c.waitStopped(pid)
		}
	}
}

// waitStopped waits until process pid, sent SIGSTOP, is stopped (state T
// in /proc/PID/stat), or has ended (a zombie, or gone).
func (c *Cluster) waitStopped(pid int) {
	c.tb.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		state, err := procState(pid)
		if err != nil || state == 'T' || state == 'Z' || state == 'X' {
			return
		}
		if time.Now().After(deadline) {
			c.tb.Fatalf("process %d of the server: state %c a minute after SIGSTOP", pid, state)
		}
		time.Sleep(time.Millisecond) // a poll of the process's state
	}
}

// procState returns the state of process pid (the field after the
// command in /proc/PID/stat: R, S, D, T, Z …).
func procState(pid int) (byte, error) {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, err
	}
	// pid (comm) state ...: comm may hold spaces and parentheses.
	i := strings.LastIndex(string(stat), ") ")
	if i < 0 || i+2 >= len(stat) {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, stat)
	}
	return stat[i+2], nil
}

// Restart restarts the server with pg_ctl restart -m mode ("smart",
// "fast" or "immediate") and waits until it accepts connections again.
func (c *Cluster) Restart(mode string) {
	c.tb.Helper()
	if out, err := c.run("pg_ctl", "restart", "-D", c.data, "-m", mode, "-l", c.log(), "-w", "-t", "60", "-o", c.opts); err != nil {
		c.tb.Fatalf("pg_ctl restart -m %s: %v\n%s\n%s", mode, err, out, c.logText())
	}
}

// Exec runs sql on a connection of its own, failing tb on an error.
func (c *Cluster) Exec(sql string) {
	c.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.url)
	if err != nil {
		c.tb.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		c.tb.Fatalf("%s: %v", sql, err)
	}
}

// destroy stops the server, whatever its state, and deletes its files.
func (c *Cluster) destroy() {
	if _, err := os.Stat(filepath.Join(c.data, "postmaster.pid")); err == nil {
		pids, _ := c.pids()
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGCONT)
		}
		if out, err := c.run("pg_ctl", "stop", "-D", c.data, "-m", "immediate", "-w"); err != nil {
			c.tb.Errorf("pg_ctl stop: %v\n%s", err, out)
		}
	}
	if c.tb.Failed() {
		c.tb.Logf("the server's log:\n%s", c.logText())
	}
	os.RemoveAll(c.data)
	os.RemoveAll(c.dir)
}
