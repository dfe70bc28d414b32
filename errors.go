package toolgate

import "errors"

// The sentinel errors of the package, in one place, matched with
// [errors.Is]. They are returned wrapped with details, and the error types
// ([*DecisionError], [*PanicError], and provider.Error of the adapters) match the sentinel of
// their kind.
var (
	// Errors of running turns.

	// ErrAbortTurn is matched by tool errors that must end the run instead of
	// becoming an error result for the model: a guard's refusal right before a
	// call runs, for example. The turn ends with such an error without
	// consulting the error handler; calls after it do not run.
	ErrAbortTurn = errors.New("toolgate: the run was aborted")
	// ErrBadStream is wrapped by errors about malformed streams (a tool-call
	// fragment with an out-of-range index).
	ErrBadStream = errors.New("toolgate: malformed stream")
	// ErrInvalidDecisions is matched by every [*DecisionError].
	ErrInvalidDecisions = errors.New("toolgate: invalid decisions")
	// ErrInvalidMessage is wrapped by every error of [UnmarshalMessage] and
	// [UnmarshalMessages] about a message that is not well formed.
	ErrInvalidMessage = errors.New("toolgate: invalid message")
	// ErrLimitExceeded is matched by the error of a resumption whose
	// allowed calls would pass [ClientOptions.MaxCalls] or
	// [ClientOptions.MaxCallsPerTool]; nothing of the reply ran. A turn
	// whose reply would pass a limit ends with [FinishToolLimit] instead.
	ErrLimitExceeded = errors.New("toolgate: tool call limit exceeded")
	// ErrPanicked is matched by every [*PanicError].
	ErrPanicked = errors.New("toolgate: code called by the gate panicked")

	// Errors a tool call can end with. Each is wrapped with details and
	// reaches the model as an error result through the error handler.

	// ErrInvalidArguments: the arguments are not valid JSON or do not match
	// the tool's input schema. The tool's function did not run.
	ErrInvalidArguments = errors.New("invalid arguments")
	// ErrUnknownTool: the call names a tool the prompt does not carry.
	ErrUnknownTool = errors.New("unknown tool")
	// ErrNoImplementation: the tool was decoded from JSON and has no
	// function to run.
	ErrNoImplementation = errors.New("tool has no implementation")
	// ErrToolPanicked wraps the value of a panic in a tool; the panic is turned
	// into an error result and the stack is logged.
	ErrToolPanicked = errors.New("tool panicked")

	// Errors of a [ConversationStore]. Implementations return them wrapped
	// with %w.

	// ErrPauseOpen: the conversation has an unresolved pause, and the
	// append does not resolve it.
	ErrPauseOpen = errors.New("toolgate: the conversation has an unresolved pause")
	// ErrNoOpenPause: there is no open pause with that id (none, another
	// one, already claimed or resolved).
	ErrNoOpenPause = errors.New("toolgate: no open pause with that id")
	// ErrConflict: the conversation changed since the caller loaded it.
	ErrConflict = errors.New("toolgate: the conversation changed concurrently")
	// ErrInvalidAppend: the append, claim or mark is malformed (nil
	// message, a pause on a message that is not a reply with tool calls, a
	// resolution that does not start with a tool message, an empty id or
	// token, a call marked as started twice).
	ErrInvalidAppend = errors.New("toolgate: invalid append")
	// ErrCorrupt: stored data cannot be read back (a damaged row, a schema
	// or format version this build does not know).
	ErrCorrupt = errors.New("toolgate: stored conversation is corrupt")
	// ErrClaimLost: the pause is no longer claimed with the caller's token. A
	// recovery took the claim over (or the pause was resolved), so the caller
	// must start no more calls and its results will not be stored.
	ErrClaimLost = errors.New("toolgate: the claim on the pause was lost")

	// Errors of [Client.RecoverPause].

	// ErrClaimActive: the pause's claim is younger than the lease given to
	// [Client.RecoverPause]; its claimant may still be running.
	ErrClaimActive = errors.New("toolgate: the pause's claim is younger than its lease")
	// ErrNotClaimed: the pause is open but unclaimed; there is nothing to
	// recover (resume, deny or expire it instead).
	ErrNotClaimed = errors.New("toolgate: the pause is not claimed")
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
