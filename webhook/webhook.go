package webhook

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// The defaults of [Options].
const (
	DefaultMaxAttempts = 12
	DefaultMinBackoff  = time.Second
	DefaultMaxBackoff  = 10 * time.Minute
	DefaultTimeout     = 10 * time.Second
	DefaultQueueSize   = 1000
	DefaultLogSize     = 1000
)

// Endpoint is a receiver of webhooks.
type Endpoint struct {
	// Name names the endpoint in the delivery log and in log lines, which
	// never show its URL (a URL such as a chat service's incoming webhook
	// holds a secret). Required; unique.
	Name string
	// URL is where messages are posted: https, or http for a receiver on
	// a private network. Required.
	URL string
	// Secret signs the messages: "whsec_" and the base64 of 24 to 64
	// random bytes, as Standard Webhooks libraries generate and read it.
	// Required.
	Secret string
	// Types are the message types the endpoint receives, such as
	// "pause.paused". nil: every type.
	Types []string
}

// Options configure a [Sender].
type Options struct {
	// Endpoints receive the messages. At least one is required.
	Endpoints []Endpoint
	// MaxAttempts is how many times a message is posted to an endpoint
	// before it is given up as failed. 0: [DefaultMaxAttempts].
	MaxAttempts int
	// MinBackoff is the wait after the first failed attempt; each later
	// wait doubles, up to MaxBackoff. 0: [DefaultMinBackoff] and
	// [DefaultMaxBackoff].
	MinBackoff, MaxBackoff time.Duration
	// Timeout bounds one attempt. 0: [DefaultTimeout].
	Timeout time.Duration
	// QueueSize bounds the messages waiting for one endpoint; a message
	// that finds the queue full is dropped (and logged so). 0:
	// [DefaultQueueSize].
	QueueSize int
	// LogSize is how many deliveries [Sender.Deliveries] remembers; older
	// ones are forgotten. 0: [DefaultLogSize].
	LogSize int
	// Client posts the messages; redirects are not followed. nil: a
	// client of the sender's own.
	Client *http.Client
	// Logger receives a line per failed attempt and per given-up or
	// dropped message. nil: [slog.Default].
	Logger *slog.Logger
}

// Status is the state of a [Delivery]. Its values never change.
type Status string

// The statuses of a delivery.
const (
	StatusPending   Status = "pending"   // waiting for its first attempt or a retry
	StatusDelivered Status = "delivered" // the endpoint answered 2xx
	StatusFailed    Status = "failed"    // every attempt failed; given up
	StatusDropped   Status = "dropped"   // the endpoint's queue was full, or the sender closed first
)

// Delivery is a message's delivery to one endpoint, as the delivery log
// keeps it.
//
// JSON: {"message_id","type","endpoint","status","attempts",
// "last_status_code","last_error","created_at","last_attempt_at",
// "next_attempt_at","delivered_at"}; empty fields are omitted.
type Delivery struct {
	// MessageID is the webhook-id header: the same for every attempt and
	// every endpoint of one message.
	MessageID string `json:"message_id"`
	// Type is the message's type.
	Type string `json:"type"`
	// Endpoint is the endpoint's name.
	Endpoint string `json:"endpoint"`
	Status   Status `json:"status"`
	// Attempts counts the posts made so far.
	Attempts int `json:"attempts"`
	// LastStatusCode is the status of the last answer; 0 when none came.
	LastStatusCode int `json:"last_status_code,omitempty"`
	// LastError says why the last attempt failed; "" when it did not.
	LastError     string     `json:"last_error,omitempty"`
	CreatedAt     time.Time  `json:"created_at"`
	LastAttemptAt *time.Time `json:"last_attempt_at,omitempty"`
	NextAttemptAt *time.Time `json:"next_attempt_at,omitempty"`
	DeliveredAt   *time.Time `json:"delivered_at,omitempty"`
}

// Message is the body of every webhook, as Standard Webhooks recommends
// it: {"type","timestamp","data"}.
type Message struct {
	Type      string          `json:"type"`
	Timestamp time.Time       `json:"timestamp"`
	Data      json.RawMessage `json:"data"`
}

// ErrClosed is the error of [Sender.Send] after [Sender.Close].
var ErrClosed = errors.New("webhook: sender closed")

// Sender posts signed messages to endpoints in the background, retrying
// with backoff, and keeps a log of the deliveries in memory. Messages
// wait in memory too: those not yet delivered when the process exits are
// lost. A Sender is safe for concurrent use.
type Sender struct {
	// fixed at creation
	opts    Options
	targets []*target
	logger  *slog.Logger
	client  *http.Client
	done    chan struct{}
	wg      sync.WaitGroup

	mu     sync.Mutex
	closed bool        // guarded by mu
	log    []*Delivery // guarded by mu: a ring of the last LogSize deliveries
	next   int         // guarded by mu: where the next delivery goes in log
}

// target is an endpoint with its queue.
type target struct {
	Endpoint
	signer *standardwebhooks.Webhook
	queue  chan *job
}

// job is a message on its way to one endpoint.
type job struct {
	id   string
	body []byte
	d    *Delivery // guarded by Sender.mu
}

// Problem is one problem of [Options].
type Problem struct {
	// Field names the option at fault as a configuration file does, such
	// as "endpoints[0].secret" or "max_backoff".
	Field string
	// Message says what is wrong; it never repeats a secret or a URL.
	Message string
}

// OptionsError is the error of [New] for unusable options: every problem
// found.
type OptionsError struct {
	Problems []Problem
}

func (e *OptionsError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.Field + ": " + p.Message
	}
	return "webhook: invalid options: " + strings.Join(parts, "; ")
}

// Check returns what is wrong with the options, nil when [New] accepts
// them.
func (o *Options) Check() []Problem {
	var problems []Problem
	bad := func(field, format string, args ...any) {
		problems = append(problems, Problem{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	if len(o.Endpoints) == 0 {
		bad("endpoints", "at least one endpoint is required")
	}
	names := map[string]bool{}
	for i, e := range o.Endpoints {
		p := fmt.Sprintf("endpoints[%d]", i)
		switch {
		case e.Name == "":
			bad(p+".name", "required")
		case names[e.Name]:
			bad(p+".name", "another endpoint is named %q", e.Name)
		}
		names[e.Name] = true
		if u, err := url.Parse(e.URL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			bad(p+".url", "not an http or https URL") // the URL is not repeated: it may hold a secret
		}
		if _, err := newSigner(e.Secret); err != nil {
			bad(p+".secret", "%v", err)
		}
		for j, t := range e.Types {
			if !validType(t) {
				bad(fmt.Sprintf("%s.types[%d]", p, j), "not a message type such as pause.paused: %q", t)
			}
		}
	}
	for _, f := range []struct {
		name string
		v    int64
	}{{"max_attempts", int64(o.MaxAttempts)}, {"min_backoff", int64(o.MinBackoff)}, {"max_backoff", int64(o.MaxBackoff)},
		{"timeout", int64(o.Timeout)}, {"queue_size", int64(o.QueueSize)}, {"log_size", int64(o.LogSize)}} {
		if f.v < 0 {
			bad(f.name, "must not be negative")
		}
	}
	if o.MaxBackoff > 0 && o.MaxBackoff < o.MinBackoff {
		bad("max_backoff", "less than min_backoff")
	}
	return problems
}

// validType reports whether t can be a message type: 1 to 64 of
// [a-z0-9._].
func validType(t string) bool {
	if t == "" || len(t) > 64 {
		return false
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '.' || c == '_') {
			return false
		}
	}
	return true
}

// newSigner returns the signer of a secret, which must be "whsec_" and
// the base64 of 24 to 64 bytes.
func newSigner(secret string) (*standardwebhooks.Webhook, error) {
	if !strings.HasPrefix(secret, "whsec_") {
		return nil, errors.New(`want "whsec_" and the base64 of 24 to 64 random bytes`)
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	switch {
	case err != nil:
		return nil, errors.New("the part after whsec_ is not base64")
	case len(key) < 24 || len(key) > 64:
		return nil, fmt.Errorf("want 24 to 64 bytes of key after whsec_, got %d", len(key))
	}
	return standardwebhooks.NewWebhookRaw(key)
}

// New returns a sender for opts, which it copies, and starts one worker per
// endpoint. Close it when done. The error for unusable options is an
// [*OptionsError] listing every problem.
func New(opts *Options) (*Sender, error) {
	if opts == nil {
		opts = &Options{}
	}
	if problems := opts.Check(); len(problems) > 0 {
		return nil, &OptionsError{Problems: problems}
	}
	o := *opts
	o.Endpoints = slices.Clone(opts.Endpoints)
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.MaxAttempts, DefaultMaxAttempts)
	def(&o.QueueSize, DefaultQueueSize)
	def(&o.LogSize, DefaultLogSize)
	if o.MinBackoff == 0 {
		o.MinBackoff = DefaultMinBackoff
	}
	if o.MaxBackoff == 0 {
		o.MaxBackoff = max(DefaultMaxBackoff, o.MinBackoff)
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	s := &Sender{opts: o, logger: o.Logger, done: make(chan struct{}), log: make([]*Delivery, 0, min(o.LogSize, 64))}
	if s.logger == nil {
		s.logger = slog.Default()
	}
	if o.Client != nil {
		c := *o.Client
		s.client = &c
	} else {
		s.client = &http.Client{}
	}
	s.client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	for _, e := range o.Endpoints {
		signer, _ := newSigner(e.Secret) // checked
		e.Types = slices.Clone(e.Types)
		t := &target{Endpoint: e, signer: signer, queue: make(chan *job, o.QueueSize)}
		s.targets = append(s.targets, t)
		s.wg.Add(1)
		go s.work(t)
	}
	return s, nil
}

// Send queues a message of type typ whose data is the JSON of data for
// every endpoint that takes the type, and returns at once: it never waits
// for a receiver. It fails only when data has no JSON encoding, typ is no
// message type, or the sender is closed. The message id it returns is the
// webhook-id of every delivery of the message.
func (s *Sender) Send(typ string, data any) (string, error) {
	if !validType(typ) {
		return "", fmt.Errorf("webhook: invalid message type %q", typ)
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return "", fmt.Errorf("webhook: encoding the data: %w", err)
	}
	now := time.Now().UTC()
	body, err := json.Marshal(Message{Type: typ, Timestamp: now, Data: raw})
	if err != nil {
		return "", fmt.Errorf("webhook: encoding the message: %w", err)
	}
	id := "msg_" + strings.ToLower(rand.Text())
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return "", ErrClosed
	}
	for _, t := range s.targets {
		if t.Types != nil && !slices.Contains(t.Types, typ) {
			continue
		}
		j := &job{id: id, body: body, d: &Delivery{MessageID: id, Type: typ, Endpoint: t.Name, Status: StatusPending, CreatedAt: now}}
		s.remember(j.d)
		select {
		case t.queue <- j:
		default:
			j.d.Status = StatusDropped
			j.d.LastError = "the endpoint's queue was full"
			s.logger.Error("webhook: a message was dropped: the endpoint's queue is full", "endpoint", t.Name, "message", id, "type", typ)
		}
	}
	return id, nil
}

// remember adds d to the log. s.mu is held.
func (s *Sender) remember(d *Delivery) {
	if len(s.log) < s.opts.LogSize {
		s.log = append(s.log, d)
		return
	}
	s.log[s.next] = d
	s.next = (s.next + 1) % s.opts.LogSize
}

// Deliveries returns copies of the deliveries in the log, the newest
// first.
func (s *Sender) Deliveries() []Delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Delivery, 0, len(s.log))
	for i := range s.log {
		// The oldest is at s.next once the ring is full.
		d := s.log[(s.next+len(s.log)-1-i)%len(s.log)]
		out = append(out, *d)
	}
	return out
}

// Close stops the workers: an attempt in progress is canceled, and
// messages not yet delivered are logged as dropped. Close waits for the
// workers and is idempotent.
func (s *Sender) Close() error {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.done)
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

// work delivers the messages of t's queue, one at a time and in order: a
// message being retried holds back the later ones, so that a receiver
// sees the messages in the order they were sent.
func (s *Sender) work(t *target) {
	defer s.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-s.done
		cancel()
	}()
	for {
		select {
		case <-s.done:
			s.drain(t)
			return
		case j := <-t.queue:
			if !s.deliver(ctx, t, j) {
				s.drop(j, "the sender closed before delivery")
				s.drain(t)
				return
			}
		}
	}
}

// drain marks the messages left in t's queue as dropped.
func (s *Sender) drain(t *target) {
	for {
		select {
		case j := <-t.queue:
			s.drop(j, "the sender closed before delivery")
		default:
			return
		}
	}
}

func (s *Sender) drop(j *job, why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if j.d.Status == StatusPending {
		j.d.Status = StatusDropped
		j.d.LastError = why
		j.d.NextAttemptAt = nil
	}
}

// deliver posts j to t until it succeeds or the attempts are spent; false
// when the sender closed first.
func (s *Sender) deliver(ctx context.Context, t *target, j *job) bool {
	wait := s.opts.MinBackoff
	for attempt := 1; ; attempt++ {
		code, err := s.post(ctx, t, j)
		now := time.Now().UTC()
		s.mu.Lock()
		d := j.d
		d.Attempts = attempt
		d.LastAttemptAt = &now
		d.LastStatusCode = code
		d.NextAttemptAt = nil
		if err == nil {
			d.Status, d.LastError, d.DeliveredAt = StatusDelivered, "", &now
			s.mu.Unlock()
			return true
		}
		d.LastError = err.Error()
		last := attempt >= s.opts.MaxAttempts
		if last {
			d.Status = StatusFailed
		} else {
			next := now.Add(wait)
			d.NextAttemptAt = &next
		}
		s.mu.Unlock()
		if ctx.Err() != nil {
			return false
		}
		if last {
			s.logger.Error("webhook: a message was given up", "endpoint", t.Name, "message", j.id, "attempts", attempt, "err", err)
			return true
		}
		s.logger.Warn("webhook: an attempt failed; retrying", "endpoint", t.Name, "message", j.id, "attempt", attempt, "retry_in", wait, "err", err)
		timer := time.NewTimer(wait)
		select {
		case <-timer.C:
		case <-s.done:
			timer.Stop()
			return false
		}
		wait = min(wait*2, s.opts.MaxBackoff)
	}
}

// post makes one attempt: the status of the answer, if any, and an error
// unless it was 2xx. The error never holds the endpoint's URL.
func (s *Sender) post(ctx context.Context, t *target, j *job) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.URL, bytes.NewReader(j.body))
	if err != nil {
		return 0, errors.New("cannot build the request")
	}
	ts := time.Now()
	sig, err := t.signer.Sign(j.id, ts, j.body)
	if err != nil {
		return 0, fmt.Errorf("signing: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "toolgate-webhook")
	req.Header.Set(standardwebhooks.HeaderWebhookID, j.id)
	req.Header.Set(standardwebhooks.HeaderWebhookTimestamp, fmt.Sprint(ts.Unix()))
	req.Header.Set(standardwebhooks.HeaderWebhookSignature, sig)
	resp, err := s.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // without the URL
		}
		if ctx.Err() != nil {
			return 0, fmt.Errorf("no answer within %v", s.opts.Timeout)
		}
		return 0, err
	}
	io.CopyN(io.Discard, resp.Body, 64<<10) // lets the connection be reused
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, fmt.Errorf("answered %d", resp.StatusCode)
	}
	return resp.StatusCode, nil
}
