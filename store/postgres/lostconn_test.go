package postgres_test

import (
	"context"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/audit/audittest"
	"github.com/toolgate/toolgate/records"
	"github.com/toolgate/toolgate/store/postgres"
	"github.com/toolgate/toolgate/storekit"
)

// cutter forwards TCP connections to a PostgreSQL server until cut, which
// closes every connection at once, as a network or a server that vanished
// would: the client reads an unexpected end of file, not an error message.
type cutter struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

// newCutter returns a cutter in front of the server of testURL and the URL
// to reach the server through it. Without a TCP URL the test is skipped.
func newCutter(t *testing.T) (*cutter, string) {
	t.Helper()
	u, err := url.Parse(testURL(t))
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" || strings.HasPrefix(u.Hostname(), "/") {
		t.Skip("TOOLGATE_POSTGRES_URL is not a URL of a server over TCP")
	}
	upstream := u.Host
	if u.Port() == "" {
		upstream = net.JoinHostPort(u.Hostname(), "5432")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &cutter{ln: ln}
	t.Cleanup(func() { ln.Close(); c.cut() })
	go func() {
		for {
			down, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", upstream)
			if err != nil {
				down.Close()
				continue
			}
			c.mu.Lock()
			c.conns = append(c.conns, down, up)
			c.mu.Unlock()
			go func() { _, _ = io.Copy(up, down); up.Close() }()
			go func() { _, _ = io.Copy(down, up); down.Close() }()
		}
	}()
	u.Host = ln.Addr().String()
	return c, u.String()
}

// cut closes every connection made so far.
func (c *cutter) cut() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, conn := range c.conns {
		conn.Close()
	}
	c.conns = nil
}

// TestHookAuditLostConnection checks that an audit append in a store's
// transaction whose connection is lost (the server vanished: no error
// message, the connection just ends) fails as unavailable, which the
// service answers 503 with Retry-After, not 500; and stores nothing.
func TestHookAuditLostConnection(t *testing.T) {
	c, proxied := newCutter(t)
	schema := newSchema(t)
	s, err := postgres.Open(t.Context(), proxied, &postgres.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	rs, err := s.Records(ctx)
	if err != nil {
		t.Fatal(err)
	}
	hook := func(ctx context.Context, tx records.Tx, w *records.Write) error {
		c.cut()
		rec := audittest.Sample(1)
		rec.ConversationID = w.ConversationID
		return tx.Audit(rec)
	}
	err = s.Append(records.WithHook(ctx, rs, hook), "c1", &toolgate.AppendParams{Messages: []toolgate.Message{&toolgate.UserMessage{Text: "hello"}}})
	if err == nil || !storekit.Unavailable(err) {
		t.Fatalf("Append with its connection lost during the audit append: %v, want an error of an unavailable database", err)
	}
	direct := openIn(t, schema)
	if conv, err := direct.Load(ctx, "c1"); err != nil || len(conv.Messages) != 0 {
		t.Errorf("after the failed append: %+v, %v; want nothing stored", conv, err)
	}
}
