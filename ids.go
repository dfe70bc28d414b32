package toolgate

import "crypto/rand"

// base32 is the alphabet of [rand.Text].
const base32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"

// randomID returns prefix followed by 26 random characters of the
// alphabet of [rand.Text] (at least 128 bits), in one allocation.
func randomID(prefix string) string {
	var buf [64]byte
	if len(prefix) > len(buf)-26 {
		return prefix + rand.Text()
	}
	n := copy(buf[:], prefix)
	tail := buf[n : n+26]
	rand.Read(tail)
	for i := range tail {
		tail[i] = base32[tail[i]%32]
	}
	return string(buf[:n+26])
}
