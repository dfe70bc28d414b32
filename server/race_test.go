package server_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/toolgate/toolgate/internal/flightdemo"
	"github.com/toolgate/toolgate/serve"
	"github.com/toolgate/toolgate/server"
	"github.com/toolgate/toolgate/telemetry"
)

// raceRounds is how many pauses the races of two instances decide: 200,
// or 50 with the race detector (which makes 200 rounds on SQLite take two
// minutes), 10 with -short.
func raceRounds() int {
	switch {
	case testing.Short():
		return 10
	case raceDetector:
		return 50
	}
	return 200
}

// raceDeciders is how many decisions race for each pause.
const raceDeciders = 64

// raceConfig is validConfig with a second approver, cy, whose key is
// approver2Key.
var raceConfig = validConfig + "\t\t- sha256: " + server.HashAPIKey(approver2Key) + "\n\t\t\tprincipal: {id: cy, roles: [approver]}\n"

// instance is one server built from a configuration file, with the
// telemetry that counts its tool runs.
type instance struct {
	*fixture
	tel *telemetry.Telemetry
}

// buildInstance builds a server from the configuration file at path.
func buildInstance(t *testing.T, path string) instance {
	t.Helper()
	fc, err := serve.LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	tel := telemetry.New(nil)
	cfg, closeAll, err := serve.Build(context.Background(), fc, &serve.BuildOptions{
		Telemetry: tel,
		Logger:    slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := closeAll(); err != nil {
			t.Error(err)
		}
	})
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return instance{fixture: &fixture{t: t, h: srv, srv: srv}, tel: tel}
}

// toolRuns returns how many times the instances ran tool.
func toolRuns(t *testing.T, instances []instance, tool string) int {
	t.Helper()
	n := 0
	for _, in := range instances {
		for _, status := range []string{"ok", "error"} {
			if v := metric(t, in.tel.Registry(), "toolgate_tool_runs_total", map[string]string{"agent": "flights", "tool": tool, "status": status}); v > 0 {
				n += int(v)
			}
		}
	}
	return n
}

// raceAnswer is what a racing decision was answered.
type raceAnswer struct {
	code     int
	error    string
	decision struct {
		DecidedBy string `json:"decided_by"`
		Outcome   string `json:"outcome"`
		Decisions []struct {
			Key     string `json:"key"`
			Verdict string `json:"verdict"`
		} `json:"decisions"`
	}
	hasDecision bool
}

// bookVerdict returns the verdict the decision record gives call_book.
func (a *raceAnswer) bookVerdict() string {
	for _, d := range a.decision.Decisions {
		if d.Key == "call_book" {
			return d.Verdict
		}
	}
	return ""
}

// raceInstances races raceDeciders decisions on each of rounds pauses,
// spread over the instances, from two approvers, half allowing and half
// denying the booking. Exactly one decision wins each pause and is
// answered 200; every other is answered 409 already_decided with the
// winner's record; the conversation shows the winner's record; the tools
// of the pause ran once (flightStatus) and once or never (bookFlight, as
// the winner said).
func raceInstances(t *testing.T, instances []instance, rounds int) {
	keys := map[string]string{exampleApproverKey: "bob", approver2Key: "cy"}
	for round := range rounds {
		owner := instances[round%len(instances)]
		conv := owner.must(201, "POST", "/v1/conversations", exampleTravellerKey, `{}`)["id"].(string)
		out := owner.must(200, "POST", messagesPath(conv), exampleTravellerKey, `{"input":"`+flightdemo.Input+`"}`)
		pause := out["pause"].(map[string]any)["id"].(string)
		status0, book0 := toolRuns(t, instances, "flightStatus"), toolRuns(t, instances, "bookFlight")

		answers := make([]raceAnswer, raceDeciders)
		verdicts := make([]string, raceDeciders)
		deciders := make([]string, raceDeciders)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range raceDeciders {
			in := instances[i%len(instances)]
			verdicts[i] = "allow"
			if i/len(instances)%2 == 1 {
				verdicts[i] = "deny"
			}
			key := exampleApproverKey
			if i%3 == 0 {
				key = approver2Key
			}
			deciders[i] = keys[key]
			body := `{"decisions":[{"key":"call_book","verdict":"` + verdicts[i] + `"}]}`
			wg.Go(func() {
				<-start
				req := httptest.NewRequest("POST", decisionsPath(conv, pause), strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+key)
				rec := httptest.NewRecorder()
				in.h.ServeHTTP(rec, req)
				a := &answers[i]
				a.code = rec.Code
				var raw struct {
					Error    string          `json:"error"`
					Decision json.RawMessage `json:"decision"`
				}
				if err := json.Unmarshal(rec.Body.Bytes(), &raw); err != nil {
					a.error = "body not JSON: " + rec.Body.String()
					return
				}
				a.error = raw.Error
				if len(raw.Decision) > 0 && string(raw.Decision) != "null" {
					a.hasDecision = json.Unmarshal(raw.Decision, &a.decision) == nil
				}
			})
		}
		close(start)
		wg.Wait()

		winner := -1
		for i := range answers {
			if answers[i].code == 200 {
				if winner >= 0 {
					t.Errorf("round %d: decisions %d and %d both won", round, winner, i)
				}
				winner = i
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: no decision won: %+v", round, answers)
		}
		w := &answers[winner]
		if !w.hasDecision || w.decision.DecidedBy != deciders[winner] || w.bookVerdict() != verdicts[winner] || w.decision.Outcome != "decided" {
			t.Errorf("round %d: the winner's record %+v, want %s's %s, decided", round, w.decision, deciders[winner], verdicts[winner])
		}
		for i := range answers {
			a := &answers[i]
			if i == winner {
				continue
			}
			switch {
			case a.code != 409 || a.error != "already_decided":
				t.Errorf("round %d: decision %d: %d %s, want 409 already_decided", round, i, a.code, a.error)
			case !a.hasDecision || a.decision.DecidedBy != deciders[winner] || a.bookVerdict() != verdicts[winner]:
				t.Errorf("round %d: decision %d was refused with the record %+v, want the winner's (%s, %s)", round, i, a.decision, deciders[winner], verdicts[winner])
			}
		}

		// Every instance shows the winner's record.
		for _, in := range instances {
			got := in.must(200, "GET", "/v1/conversations/"+conv, exampleTravellerKey, "")
			recs, _ := got["decisions"].([]any)
			if got["pause"] != nil || len(recs) != 1 {
				t.Fatalf("round %d: conversation after the race: pause %v, decisions %v", round, got["pause"], recs)
			}
			rec := recs[0].(map[string]any)
			verdict := ""
			for _, d := range rec["decisions"].([]any) {
				if d := d.(map[string]any); d["key"] == "call_book" {
					verdict, _ = d["verdict"].(string)
				}
			}
			if rec["decided_by"] != deciders[winner] || rec["outcome"] != "decided" || verdict != verdicts[winner] {
				t.Errorf("round %d: decision record %v, want %s's %s", round, rec, deciders[winner], verdicts[winner])
			}
		}

		wantBook := 0
		if verdicts[winner] == "allow" {
			wantBook = 1
		}
		status, book := toolRuns(t, instances, "flightStatus")-status0, toolRuns(t, instances, "bookFlight")-book0
		if status != 1 || book != wantBook {
			t.Fatalf("round %d: flightStatus ran %d times, bookFlight %d; want 1 and %d (%s won with %s)", round, status, book, wantBook, deciders[winner], verdicts[winner])
		}
		if t.Failed() {
			t.FailNow()
		}
	}
}

// TestRaceSQLiteInstances races 64 decisions, allows and denials from two
// approvers, on each of 200 pauses (see raceRounds) through two servers built from one
// configuration file on one SQLite file.
func TestRaceSQLiteInstances(t *testing.T) {
	rounds := raceRounds()
	path := writeConfig(t, strings.Replace(raceConfig, "\tsqlite: data/toolgate.db\n", "\tsqlite: "+filepath.Join(t.TempDir(), "toolgate.db")+"\n", 1))
	raceInstances(t, []instance{buildInstance(t, path), buildInstance(t, path)}, rounds)
}

// TestRacePostgresInstances is TestRaceSQLiteInstances on PostgreSQL:
// two servers built from one configuration file on one schema, each with
// its own pool.
func TestRacePostgresInstances(t *testing.T) {
	rounds := raceRounds()
	path := postgresConfigFrom(t, raceConfig)
	raceInstances(t, []instance{buildInstance(t, path), buildInstance(t, path)}, rounds)
}
