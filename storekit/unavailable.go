package storekit

import (
	"context"
	"errors"
	"net"
	"strings"
)

// ErrUnavailable is wrapped by the errors of a store that cannot serve an
// operation for now, though it may a moment later: its connection to the
// database was lost, the database is shutting down, restarting or out of
// resources, or its disk is full. What the operation would have written
// was not written, or its outcome is unknown; a caller answers "retry
// later" (503 with Retry-After) rather than "internal error". Stores wrap
// it where they know the cause; [Unavailable] recognises the common
// causes also when a store did not.
var ErrUnavailable = errors.New("storekit: the database is unavailable for now")

// Unavailable reports whether err says that the store's database is
// unavailable for now, as opposed to refusing the operation or holding
// bad data: err wraps [ErrUnavailable]; or it carries an SQLSTATE (an
// error with a SQLState method, as PostgreSQL drivers give) of class 08
// (connection exception) or 53 (insufficient resources, such as a full
// disk), or 57P01 to 57P03 (the server is shutting down, crashed or is
// starting); or it is a network error. An unexpected end of input
// (io.ErrUnexpectedEOF) is not enough: decoding a damaged stored value
// reports it too, so a store wraps ErrUnavailable where it knows that its
// connection ended. A deadline or a cancellation is not reported here: callers
// tell those apart with [context.DeadlineExceeded] and [context.Canceled].
func Unavailable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if errors.Is(err, ErrUnavailable) {
		return true
	}
	var st interface{ SQLState() string }
	if errors.As(err, &st) {
		code := st.SQLState()
		return strings.HasPrefix(code, "08") || strings.HasPrefix(code, "53") ||
			code == "57P01" || code == "57P02" || code == "57P03"
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, net.ErrClosed)
}
