package fakeapi

import (
	"testing"

	"github.com/toolgate/toolgate/provider/internal/recording"
)

// Rule is a documented rule of a provider's API that a [Referee] enforces:
// what the API rejects, and what it must remember of its own replies to
// judge later requests. A Referee calls both methods one at a time, with
// its lock held, so a Rule may keep its state in plain fields.
type Rule interface {
	// Check judges a request body; a non-nil error rejects the request.
	Check(body []byte) error
	// Learn sees each recorded reply as it is served.
	Learn(reply recording.Exchange) error
}

// Referee is a [Server] that replays recorded replies and rejects the
// requests its [Rule] finds against the API's rules, as the API does.
// A request's rejection is recorded and answered with what refuse returns;
// an accepted request is answered with the next reply.
type Referee struct {
	*Server

	refusals []string // guarded by Server.mu
}

// NewReferee starts a referee enforcing rule and answering with replies,
// closed when tb ends. refuse builds the API's error answer from the
// reason a request was rejected.
func NewReferee(tb testing.TB, rule Rule, refuse func(reason string) Answer, opts *Options, replies ...recording.Exchange) *Referee {
	tb.Helper()
	answers := make([]Answer, len(replies))
	for i, e := range replies {
		answers[i] = Recorded(e)
	}
	r := &Referee{}
	r.Server = New(tb, opts, answers...)
	r.Server.judge = func(body []byte) (Answer, bool) {
		err := rule.Check(body)
		if err == nil {
			return Answer{}, false
		}
		r.refusals = append(r.refusals, err.Error())
		return refuse(err.Error()), true
	}
	r.Server.learn = rule.Learn
	return r
}

// AddReplies appends recorded replies to those not yet served.
func (r *Referee) AddReplies(replies ...recording.Exchange) {
	for _, e := range replies {
		r.Add(Recorded(e))
	}
}

// Rejected returns why requests were rejected so far, in order.
func (r *Referee) Rejected() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.refusals...)
}

// CheckAccepted stops the test unless every request so far was accepted.
func (r *Referee) CheckAccepted(tb testing.TB) {
	tb.Helper()
	if got := r.Rejected(); len(got) != 0 {
		tb.Fatalf("rejected: %q", got)
	}
}
