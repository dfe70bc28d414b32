package loadgen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// Counters are cumulative readings of what a service and its database
// have spent so far. A [Meter] reads them before and after each phase of a
// run; the differences, divided by the pauses, are the run's [Cost]s.
type Counters struct {
	// ServiceCPU is the CPU time (user + system) of the service's
	// processes.
	ServiceCPU time.Duration
	// DatabaseCPU is the CPU time of the database server's processes.
	DatabaseCPU time.Duration
	// Database says whether the fields below were read: they are the
	// database's statistics, absent with SQLite.
	Database bool
	// Commits is pg_stat_database.xact_commit of the service's database:
	// every committed transaction, read-only ones included.
	Commits int64
	// WriteTransactions is how many transaction ids were assigned: the
	// transactions that wrote.
	WriteTransactions int64
	// WALSyncs is pg_stat_wal.wal_sync: how often the WAL was flushed to
	// disk (fsync or fdatasync), for any database of the server.
	WALSyncs int64
	// WALWrites is pg_stat_wal.wal_write: how often WAL buffers were
	// written out.
	WALWrites int64
}

// A Meter reads a service's [Counters]. Read is called between the phases
// of a run, while no request is in flight.
type Meter interface {
	Read(ctx context.Context) (Counters, error)
}

// Cost is what one pause cost in a phase of a run: the differences of a
// [Meter]'s [Counters] over the phase, divided by the pauses.
type Cost struct {
	ServiceCPU        time.Duration `json:"service_cpu"`
	DatabaseCPU       time.Duration `json:"database_cpu"`
	Database          bool          `json:"database"`
	Commits           float64       `json:"commits"`
	WriteTransactions float64       `json:"write_transactions"`
	WALSyncs          float64       `json:"wal_syncs"`
	WALWrites         float64       `json:"wal_writes"`
}

func (c *Cost) String() string {
	s := fmt.Sprintf("CPU %v service + %v database = %v", round(c.ServiceCPU), round(c.DatabaseCPU), round(c.ServiceCPU+c.DatabaseCPU))
	if c.Database {
		s += fmt.Sprintf("; commits %.2f (writing %.2f), WAL flushes %.2f, WAL writes %.2f", c.Commits, c.WriteTransactions, c.WALSyncs, c.WALWrites)
	}
	return s
}

// cost returns the cost per pause of the phase between a and b.
func cost(a, b Counters, n int) *Cost {
	f := float64(n)
	return &Cost{
		ServiceCPU:        (b.ServiceCPU - a.ServiceCPU) / time.Duration(n),
		DatabaseCPU:       (b.DatabaseCPU - a.DatabaseCPU) / time.Duration(n),
		Database:          a.Database && b.Database,
		Commits:           float64(b.Commits-a.Commits) / f,
		WriteTransactions: float64(b.WriteTransactions-a.WriteTransactions) / f,
		WALSyncs:          float64(b.WALSyncs-a.WALSyncs) / f,
		WALWrites:         float64(b.WALWrites-a.WALWrites) / f,
	}
}

// clockTick is the unit of the CPU times in /proc/PID/stat (USER_HZ, 100
// on Linux).
const clockTick = 10 * time.Millisecond

// ProcCPU returns the CPU time (utime + stime) that process pid has used,
// from /proc/PID/stat; with children, also that of its children that have
// ended and been waited for (cutime + cstime). Its resolution is 10 ms.
func ProcCPU(pid int, children bool) (time.Duration, error) {
	f, err := procStat(pid)
	if err != nil {
		return 0, err
	}
	t := f.utime + f.stime
	if children {
		t += f.cutime + f.cstime
	}
	return time.Duration(t) * clockTick, nil
}

// TreeCPU returns the CPU time of process pid, of its children that ended,
// and of those that are running (see [ProcCPU]): for a PostgreSQL
// server's postmaster, the CPU of the whole server.
func TreeCPU(pid int) (time.Duration, error) {
	t, err := ProcCPU(pid, true)
	if err != nil {
		return 0, err
	}
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, d := range dirs {
		child, err := strconv.Atoi(d.Name())
		if err != nil || child == pid {
			continue
		}
		f, err := procStat(child)
		if err != nil || f.ppid != pid {
			continue // ended meanwhile, or another's
		}
		t += time.Duration(f.utime+f.stime) * clockTick
	}
	return t, nil
}

// ParentPID returns the parent of process pid.
func ParentPID(pid int) (int, error) {
	f, err := procStat(pid)
	return f.ppid, err
}

type statFields struct {
	ppid                         int
	utime, stime, cutime, cstime int64
}

// procStat reads the fields of /proc/PID/stat used here. The command name
// (field 2) is in parentheses and may hold spaces and parentheses: the
// fields after it start after the last ')'.
func procStat(pid int) (statFields, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return statFields{}, err
	}
	f, err := parseStat(b)
	if err != nil {
		return statFields{}, fmt.Errorf("loadgen: /proc/%d/stat: %w", pid, err)
	}
	return f, nil
}

// parseStat parses the text of a /proc/PID/stat file.
func parseStat(b []byte) (statFields, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return statFields{}, errors.New("no command name")
	}
	// Fields from 3 (state) on; ppid is field 4, utime..cstime 14..17.
	fs := bytes.Fields(b[i+1:])
	if len(fs) < 15 {
		return statFields{}, fmt.Errorf("%d fields, want at least 17", len(fs)+2)
	}
	var n [5]int64
	for j, k := range []int{4, 14, 15, 16, 17} {
		var err error
		if n[j], err = strconv.ParseInt(string(fs[k-3]), 10, 64); err != nil {
			return statFields{}, fmt.Errorf("field %d: %w", k, err)
		}
	}
	return statFields{ppid: int(n[0]), utime: n[1], stime: n[2], cutime: n[3], cstime: n[4]}, nil
}

// ProcMeter is a [Meter] of processes on this machine: the service's CPU
// is that of PIDs (this process when empty), the database's that of
// Database when set.
type ProcMeter struct {
	// PIDs are the service's processes. Empty: this process.
	PIDs []int
	// Database, when not nil, reads the database's counters; its
	// ServiceCPU is ignored.
	Database Meter
}

// Read reads the counters.
func (m *ProcMeter) Read(ctx context.Context) (Counters, error) {
	var c Counters
	if m.Database != nil {
		d, err := m.Database.Read(ctx)
		if err != nil {
			return Counters{}, err
		}
		c = d
		c.ServiceCPU = 0
	}
	pids := m.PIDs
	if len(pids) == 0 {
		pids = []int{os.Getpid()}
	}
	var errs []error
	for _, pid := range pids {
		t, err := ProcCPU(pid, false)
		errs = append(errs, err)
		c.ServiceCPU += t
	}
	return c, errors.Join(errs...)
}
