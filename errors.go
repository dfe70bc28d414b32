package toolgate

import "errors"

// Errors of running turns, matched with [errors.Is]. The errors of stores,
// models and recovery are declared with them: see [ErrPauseOpen],
// [ErrRateLimited], [ErrClaimActive] and [ErrInvalidArguments].
var (
	// ErrAbortTurn is matched by tool errors that must end the run instead of
	// becoming an error result for the model: a guard's refusal right before a
	// call runs, for example. The [Manager] returns such an error from
	// [Manager.Run] and [Manager.Resume] without consulting the error handler;
	// calls after it do not run.
	ErrAbortTurn = errors.New("toolgate: the run was aborted")

	// ErrBadStream is wrapped by errors about malformed streams (a tool-call
	// fragment with an out-of-range index).
	ErrBadStream = errors.New("toolgate: malformed stream")

	// ErrClaimLost: the pause is no longer claimed with the caller's token. A
	// recovery took the claim over (or the pause was resolved), so the caller
	// must start no more calls and its results will not be stored.
	ErrClaimLost = errors.New("toolgate: the claim on the pause was lost")

	// ErrInvalidDecisions is matched (with [errors.Is]) by every
	// [*DecisionError].
	ErrInvalidDecisions = errors.New("toolgate: invalid decisions")

	// ErrInvalidMessage is wrapped by every error of [UnmarshalMessage] and
	// [UnmarshalMessages] about a message that is not well formed.
	ErrInvalidMessage = errors.New("toolgate: invalid message")

	// ErrLimitExceeded is matched (with [errors.Is]) by [*LimitError].
	ErrLimitExceeded = errors.New("toolgate: tool call limit exceeded")

	// ErrNoToolCalls is returned when a reply with no tool calls is given to
	// [Manager.Run].
	ErrNoToolCalls = errors.New("toolgate: the reply has no tool calls")

	// ErrPanicked is matched (with [errors.Is]) by every [*PanicError].
	ErrPanicked = errors.New("toolgate: code called by the gate panicked")

	// ErrPaused is matched (with [errors.Is]) by [*PauseError].
	ErrPaused = errors.New("toolgate: paused for confirmation")

	// ErrToolPanicked wraps the value of a panic in a tool; the panic is turned
	// into an error result and the stack is logged.
	ErrToolPanicked = errors.New("tool panicked")
)

// Texts the model reads in the results of calls that did not run as asked.
// They are stable: stored conversations quote them.
const (
	// DefaultDenyMessage is the result a denied call answers the model with
	// when the decision gives no message.
	DefaultDenyMessage = "The user did not allow this tool call."

	// EditNote opens the result of a call that ran with arguments a person
	// edited (see [AllowWithArguments]): the model reads
	// EditNote + the edited arguments + "\n" + the tool's output, so it knows
	// what actually ran. The reply keeps the arguments the model gave.
	EditNote = "The approver changed the arguments to: "

	// ExpiredMessage is the result every call of an expired pause answers the
	// model with by default (see [Client.ExpireOpenPause]).
	ExpiredMessage = "This call expired before anyone decided; it did not run."

	// InterruptedMessage is the result a call answers the model with when its
	// execution was recorded as started by a resumption that stopped before
	// storing its result (see [ResultInterrupted]).
	InterruptedMessage = "This call started, but the process running it stopped before its result was recorded, so its outcome is unknown. It was not run again."
)
