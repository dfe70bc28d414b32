package server_test

import (
	"context"
	"crypto/rand"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/internal/flightdemo"
	"github.com/toolgate/toolgate/serve"
)

// postgresConfig returns validConfig on the PostgreSQL store named by
// TOOLGATE_POSTGRES_URL, in a schema of its own dropped when the test
// ends. Without the variable the test is skipped, except in CI, where it
// fails.
func postgresConfig(t *testing.T) string {
	t.Helper()
	return postgresConfigFrom(t, validConfig)
}

// postgresConfigFrom is postgresConfig with the file text, which holds the
// store line of validConfig.
func postgresConfigFrom(t *testing.T, text string) string {
	t.Helper()
	url := os.Getenv("TOOLGATE_POSTGRES_URL")
	if url == "" {
		if ci, _ := strconv.ParseBool(os.Getenv("CI")); ci {
			t.Fatal("TOOLGATE_POSTGRES_URL is not set, and CI is: this test must run in CI")
		}
		t.Skip("TOOLGATE_POSTGRES_URL is not set")
	}
	schema := "toolgate_events_test_" + strings.ToLower(rand.Text())
	t.Cleanup(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
		}
	})
	return writeConfig(t, strings.Replace(text, "\tsqlite: data/toolgate.db\n", "\tpostgres_url_env: TOOLGATE_POSTGRES_URL\n\tpostgres_schema: "+schema+"\n", 1))
}

// guard ends s with an error if it is still open after d, so that a
// missing event fails the test instead of hanging it.
func guard(t *testing.T, s *stream, d time.Duration) {
	stop := time.AfterFunc(d, func() {
		t.Errorf("no event in %v", d)
		s.body.CloseWithError(errors.New("no event in time"))
	})
	t.Cleanup(func() { stop.Stop() })
}

// Two instances built from one configuration on one Postgres database,
// each with its pool and broker: the streams of one see what requests to
// the other did, through LISTEN/NOTIFY.
func TestEventsAcrossPostgresInstances(t *testing.T) {
	path := postgresConfig(t)
	var a, b *fixture
	for _, f := range []**fixture{&a, &b} {
		fc, err := serve.LoadConfig(path)
		if err != nil {
			t.Fatal(err)
		}
		*f = build(t, fc)
	}
	conv := a.must(201, "POST", "/v1/conversations", exampleTravellerKey, `{}`)["id"].(string)
	follow := open(t, a.h, eventsPath(conv), exampleTravellerKey)
	inbox := open(t, a.h, "/v1/inbox/events", exampleApproverKey)
	guard(t, follow, 30*time.Second)
	guard(t, inbox, 30*time.Second)

	out := b.must(200, "POST", messagesPath(conv), exampleTravellerKey, `{"input":"`+flightdemo.Input+`"}`)
	pause := out["pause"].(map[string]any)["id"].(string)
	follow.expect("paused", conv, pause)
	inbox.expect("paused", conv, pause)
	b.must(200, "POST", decisionsPath(conv, pause), exampleApproverKey, allowBookBody)
	follow.expect("decided", conv, pause)
	follow.expect("completed", conv, "")
	inbox.expect("decided", conv, pause)
}
