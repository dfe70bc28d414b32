package pgtest

// For the tests of package pgtest_test: the processes of the server and
// their states, as Stop reads them.
var ProcState = procState

func (c *Cluster) Pids() ([]int, error) { return c.pids() }
