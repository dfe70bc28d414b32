package server_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/flightdemo"
	"github.com/toolgate/toolgate/internal/pgtest"
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
	_, schema := pgtest.Schema(t, "toolgate_events_test_")
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
