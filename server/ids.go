package server

import (
	"crypto/rand"
	"encoding/base32"
	"encoding/binary"
	"time"
)

// timeIDs encodes the creation time of an id so that ids sort by it
// (base32 with the extended hex alphabet keeps the order of the bytes).
var timeIDs = base32.HexEncoding.WithPadding(base32.NoPadding)

// newConversationID returns the id of a new conversation: "conv_", its
// creation time in milliseconds (10 characters, so that ids sort by
// creation time), then 26 random characters (130 bits, [rand.Text]). The
// stores key their conversation tables and indexes by this id: the rows of
// the conversations created at about the same time — those being paused
// and decided together — share pages, so that a commit writes fewer of
// them than with ids spread over the whole key space.
func newConversationID() string {
	return newConversationIDAt(time.Now())
}

func newConversationIDAt(t time.Time) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(max(t.UnixMilli(), 0)))
	return "conv_" + timeIDs.EncodeToString(b[2:]) + rand.Text()
}
