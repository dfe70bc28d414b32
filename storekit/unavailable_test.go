package storekit_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/storekit"
)

// sqlStateError is a driver's error carrying an SQLSTATE.
type sqlStateError string

func (e sqlStateError) Error() string    { return "SQLSTATE " + string(e) }
func (e sqlStateError) SQLState() string { return string(e) }

func TestUnavailable(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{errors.New("boom"), false},
		{storekit.ErrUnavailable, true},
		{fmt.Errorf("sqlite: append: %w: disk full", storekit.ErrUnavailable), true},
		{fmt.Errorf("load: %w", sqlStateError("57P01")), true}, // admin shutdown
		{sqlStateError("57P02"), true},
		{sqlStateError("57P03"), true},
		{sqlStateError("08006"), true},  // connection failure
		{sqlStateError("53100"), true},  // disk full
		{sqlStateError("57014"), false}, // query canceled
		{sqlStateError("23505"), false}, // unique violation
		{sqlStateError("XX001"), false}, // data corrupted
		{fmt.Errorf("decoding a stored record: %w", io.ErrUnexpectedEOF), false},
		{&net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}, true},
		{net.ErrClosed, true},
		{context.DeadlineExceeded, false},
		{fmt.Errorf("%w: %w", context.Canceled, sqlStateError("08006")), false},
		{toolgate.ErrCorrupt, false},
		{toolgate.ErrConflict, false},
	} {
		if got := storekit.Unavailable(c.err); got != c.want {
			t.Errorf("Unavailable(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

func ExampleUnavailable() {
	// A store wraps ErrUnavailable where it knows the cause.
	err := fmt.Errorf("mystore: append: %w: the disk is full", storekit.ErrUnavailable)
	fmt.Println(storekit.Unavailable(err), storekit.Unavailable(toolgate.ErrConflict))
	// Output: true false
}
