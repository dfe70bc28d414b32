package toolgate

// Names the tests of the package use to drive the manager, the part of a
// [Client] that runs the calls of one reply, without a client around it.
type (
	Manager        = manager
	ManagerOptions = managerOptions
	RunParams      = runParams
	ResumeParams   = resumeParams
	RunResult      = runResult
	PauseError     = pauseError
	LimitError     = limitError
	Limits         = callLimits
)

var (
	NewManager          = newManager
	DefaultErrorHandler = defaultErrorHandler
	ErrPaused           = errPaused
	ErrNoToolCalls      = errNoToolCalls
	CheckDecisions      = checkDecisions
	Or                  = or
)
