package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/toolgate/toolgate/records"
)

// ErrPayload is wrapped by the errors of [Broker.Publish] for a payload
// NOTIFY cannot carry: 8000 bytes or more, invalid UTF-8, or a NUL byte.
var ErrPayload = errors.New("postgres: payload NOTIFY cannot carry")

// ErrBrokerClosed is returned by [Broker.Publish] after [Broker.Close].
var ErrBrokerClosed = errors.New("postgres: broker closed")

// maxPayload is the largest payload NOTIFY takes with the default block
// size: less than 8000 bytes.
const maxPayload = 7999

// DefaultChannel is the channel of a [Broker] whose options name none.
const DefaultChannel = "toolgate_events"

// BrokerOptions configure [NewBroker]. A nil *BrokerOptions means all
// defaults.
type BrokerOptions struct {
	// Channel is the notification channel: brokers on one database with
	// the same channel deliver each other's payloads. "":
	// [DefaultChannel]. At most 63 bytes.
	Channel string
	// MaxBackoff bounds the wait between attempts to reconnect the
	// listening connection, which starts at 100ms and doubles. 0: 10s.
	MaxBackoff time.Duration
	// Logger receives the losses and recoveries of the listening
	// connection. nil: [slog.Default].
	Logger *slog.Logger
}

// Broker carries small payloads between processes through PostgreSQL's
// LISTEN/NOTIFY: [Broker.Publish] notifies the channel, and every broker
// listening on it, in any process, hands the payload to its subscribers.
// It has the methods of the server package's Broker, for the event streams
// of several server instances on one database.
//
// A Broker keeps one connection of its own, outside the pool, that LISTENs.
// When that connection is lost, the Broker reconnects with backoff and then
// delivers a nil payload to every subscriber: payloads published meanwhile
// are lost, and the subscribers should read the state they follow again.
// Publishing uses the pool: the payloads of concurrent [Broker.Publish]
// calls are notified together, in one statement and one commit.
//
// A Broker is safe for concurrent use. Close it when done.
type Broker struct {
	// fixed at creation
	pool       *pgxpool.Pool
	connConfig *pgx.ConnConfig
	channel    string
	listen     string // the LISTEN statement
	maxBackoff time.Duration
	logger     *slog.Logger
	stop       context.CancelFunc
	done       chan struct{} // closed when the listening goroutine has returned

	mu   sync.RWMutex // read-held during deliveries
	subs map[*func([]byte)]struct{}

	pubs      chan *publication // to the publishing goroutine
	published chan struct{}     // closed when the publishing goroutine has returned

	closeOnce sync.Once
	closed    chan struct{}
}

// publication is a payload [Broker.Publish] waits on.
type publication struct {
	payload string
	done    chan error // receives the outcome, once
}

// maxPublishBatch bounds the notifications of one publishing statement.
const maxPublishBatch = 256

// NewBroker returns a broker that notifies through pool and listens on a
// connection of its own, made with pool's configuration. It returns once
// the broker listens, so that a subscriber added then gets every payload
// published after NewBroker returned; it fails when it cannot connect.
// opts may be nil. The caller keeps the pool: close the Broker first.
func NewBroker(ctx context.Context, pool *pgxpool.Pool, opts *BrokerOptions) (*Broker, error) {
	if pool == nil {
		panic("postgres: NewBroker with a nil pool")
	}
	if opts == nil {
		opts = &BrokerOptions{}
	}
	b := &Broker{
		pool:       pool,
		connConfig: pool.Config().ConnConfig,
		channel:    opts.Channel,
		maxBackoff: opts.MaxBackoff,
		logger:     opts.Logger,
		done:       make(chan struct{}),
		subs:       make(map[*func([]byte)]struct{}),
		pubs:       make(chan *publication),
		published:  make(chan struct{}),
		closed:     make(chan struct{}),
	}
	if b.channel == "" {
		b.channel = DefaultChannel
	}
	if len(b.channel) > 63 || strings.ContainsRune(b.channel, 0) || !utf8.ValidString(b.channel) {
		return nil, fmt.Errorf("postgres: broker channel %q: want 1 to 63 bytes of UTF-8 without NUL", b.channel)
	}
	if b.maxBackoff <= 0 {
		b.maxBackoff = 10 * time.Second
	}
	if b.logger == nil {
		b.logger = slog.Default()
	}
	b.connConfig.RuntimeParams["application_name"] = "toolgate broker"
	b.listen = "LISTEN " + pgx.Identifier{b.channel}.Sanitize()
	conn, err := b.connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("postgres: broker: %w", err)
	}
	lctx, stop := context.WithCancel(context.Background())
	b.stop = stop
	go b.run(lctx, conn)
	go b.publish(lctx)
	return b, nil
}

// NewBroker returns a [Broker] on the store's pool whose channel is the
// store's schema's: brokers of stores on the same database and schema
// share their payloads. See the package function [NewBroker].
func (s *Store) NewBroker(ctx context.Context, opts *BrokerOptions) (*Broker, error) {
	o := BrokerOptions{}
	if opts != nil {
		o = *opts
	}
	if o.Channel == "" {
		o.Channel = schemaChannel(s.schema)
	}
	return NewBroker(ctx, s.pool, &o)
}

// ChannelFor returns the broker's channel and true when rs is the record
// store of a [Store] on the broker's pool (as when the broker came from
// that Store's [Store.NewBroker]), or a store wrapping one through an
// Unwrap() records.Store method: a notification sent inside a transaction
// of that store ([records.Notifier]) reaches the broker's subscribers,
// on every instance, when the transaction commits. The server sends the
// events of a step inside the step's transaction when this holds.
func (b *Broker) ChannelFor(rs records.Store) (string, bool) {
	for range 16 {
		if r, ok := rs.(*recordStore); ok {
			return b.channel, r.s.pool == b.pool
		}
		u, ok := rs.(interface{ Unwrap() records.Store })
		if !ok {
			break
		}
		rs = u.Unwrap()
	}
	return "", false
}

// schemaChannel returns the default channel of the stores of a schema.
func schemaChannel(schema string) string {
	if schema == "public" {
		return DefaultChannel
	}
	if c := DefaultChannel + "." + schema; len(c) <= 63 {
		return c
	}
	sum := sha256.Sum256([]byte(schema))
	return DefaultChannel + "." + hex.EncodeToString(sum[:16])
}

// Channel returns the broker's notification channel.
func (b *Broker) Channel() string { return b.channel }

// connect opens the listening connection and listens.
func (b *Broker) connect(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, b.connConfig)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, b.listen); err != nil {
		conn.Close(context.Background())
		return nil, err
	}
	return conn, nil
}

// run delivers the notifications of conn, reconnecting when it is lost,
// until ctx is canceled.
func (b *Broker) run(ctx context.Context, conn *pgx.Conn) {
	defer close(b.done)
	defer func() {
		if conn != nil {
			conn.Close(context.Background())
		}
	}()
	for {
		if conn == nil {
			if conn = b.reconnect(ctx); conn == nil {
				return
			}
			b.deliver(nil)
		}
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			b.logger.Error("postgres: broker: the listening connection was lost; reconnecting", "channel", b.channel, "err", err)
			conn.Close(context.Background())
			conn = nil
			continue
		}
		if n.Channel == b.channel {
			b.deliver([]byte(n.Payload))
		}
	}
}

// reconnect connects again, waiting longer after each failure, until it
// succeeds or ctx is canceled (nil then).
func (b *Broker) reconnect(ctx context.Context) *pgx.Conn {
	wait := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		conn, err := b.connect(ctx)
		if err == nil {
			b.logger.Info("postgres: broker: listening again", "channel", b.channel, "attempts", attempt)
			return conn
		}
		if ctx.Err() != nil {
			return nil
		}
		b.logger.Error("postgres: broker: reconnecting failed", "channel", b.channel, "attempt", attempt, "err", err)
		wait = min(2*wait, b.maxBackoff)
	}
}

// deliver hands payload to every subscriber.
func (b *Broker) deliver(payload []byte) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	for f := range b.subs {
		(*f)(payload)
	}
}

// Publish notifies the broker's channel with payload, which must be valid
// UTF-8 without NUL bytes and shorter than 8000 bytes ([ErrPayload]
// otherwise). It returns once the notification is committed; every
// listening broker, this one included, delivers it soon after. When ctx
// ends first, Publish returns ctx's error, and the notification may still
// be made.
func (b *Broker) Publish(ctx context.Context, payload []byte) error {
	select {
	case <-b.closed:
		return ErrBrokerClosed
	default:
	}
	switch {
	case len(payload) > maxPayload:
		return fmt.Errorf("%w: %d bytes, more than %d", ErrPayload, len(payload), maxPayload)
	case !utf8.Valid(payload):
		return fmt.Errorf("%w: invalid UTF-8", ErrPayload)
	case strings.ContainsRune(string(payload), 0):
		return fmt.Errorf("%w: a NUL byte", ErrPayload)
	}
	p := &publication{payload: string(payload), done: make(chan error, 1)}
	select {
	case b.pubs <- p:
	case <-b.closed:
		return ErrBrokerClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-p.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// publish notifies the payloads handed to it until ctx is canceled. The
// payloads that arrive while a statement runs go together in the next
// one: NOTIFY serializes the commits of all notifying transactions of the
// cluster, each waiting for its WAL flush, so one commit for many
// payloads is what lets notifications keep up with concurrent requests.
// A statement never holds the same payload twice, since PostgreSQL would
// deliver it once; a repeat waits for the next statement.
func (b *Broker) publish(ctx context.Context) {
	defer close(b.published)
	var (
		batch    []*publication
		payloads []string
		seen     = make(map[string]bool)
		next     *publication // a repeat, first of the next statement
	)
	for {
		batch, payloads = batch[:0], payloads[:0]
		clear(seen)
		if next == nil {
			select {
			case next = <-b.pubs:
			case <-ctx.Done():
				return
			}
		}
	more:
		for next != nil && len(batch) < maxPublishBatch && !seen[next.payload] {
			batch, payloads = append(batch, next), append(payloads, next.payload)
			seen[next.payload] = true
			select {
			case next = <-b.pubs:
			default:
				next = nil
				break more
			}
		}
		_, err := b.pool.Exec(ctx, "SELECT pg_notify($1, p) FROM unnest($2::text[]) WITH ORDINALITY AS t(p, i) ORDER BY i", b.channel, payloads)
		switch {
		case err != nil && ctx.Err() != nil:
			err = ErrBrokerClosed
		case err != nil:
			err = fmt.Errorf("postgres: publish: %w", err)
		}
		for _, p := range batch {
			p.done <- err
		}
		clear(batch)
	}
}

// Subscribe calls deliver with every payload the broker receives from now
// on, one at a time, and with nil after the listening connection was lost
// and restored (payloads may have been lost), until cancel is called;
// cancel waits for a delivery in progress and is idempotent. deliver must
// return quickly, must not keep or modify the payload, and must not call
// Subscribe or cancel.
func (b *Broker) Subscribe(deliver func(payload []byte)) (cancel func()) {
	if deliver == nil {
		panic("postgres: Broker.Subscribe with a nil function")
	}
	key := &deliver
	b.mu.Lock()
	b.subs[key] = struct{}{}
	b.mu.Unlock()
	return sync.OnceFunc(func() {
		b.mu.Lock()
		delete(b.subs, key)
		b.mu.Unlock()
	})
}

// Close stops listening, closes the listening connection and waits for
// the delivery in progress, if any. Later Publish calls fail with
// [ErrBrokerClosed]. It leaves the pool open. Close is idempotent and
// returns nil.
func (b *Broker) Close() error {
	b.closeOnce.Do(func() {
		close(b.closed)
		b.stop()
		<-b.done
		<-b.published
	})
	return nil
}
