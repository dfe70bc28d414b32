//go:build unix

package sqlite

import "syscall"

// freeSpace returns the bytes of the file system holding dir that an
// unprivileged process may still use; ok is false when it cannot tell.
func freeSpace(dir string) (free uint64, ok bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return uint64(st.Bavail) * uint64(st.Bsize), true
}
