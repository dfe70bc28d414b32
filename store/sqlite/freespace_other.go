//go:build !unix

package sqlite

// freeSpace cannot tell the free space on this system.
func freeSpace(string) (uint64, bool) { return 0, false }
