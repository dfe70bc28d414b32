package server

import "time"

// SetHeartbeat sets how often s's idle streams send ": ping". Call it
// before any stream opens.
func SetHeartbeat(s *Server, d time.Duration) { s.events.heartbeat = d }

// DecodeEvent and EncodeEvent are the broker payload codec.
var (
	DecodeEvent = decodeEvent
	EncodeEvent = encodeEvent
)
