package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/flightdemo"
	"github.com/toolgate/toolgate/serve"
	"github.com/toolgate/toolgate/server"
	"github.com/toolgate/toolgate/store/sqlite"
	"github.com/toolgate/toolgate/telemetry"
)

const serveUsage = `Usage: toolgate serve [flags]

Runs the approval service. Without a configuration it starts the embedded
demo: the flight agent on a scripted model (no network, no API key), its
conversations, the service's records and its audit log in one SQLite file
under --data (toolgate.db), and two demo users whose API
keys are printed at start-up and valid until the process exits:
"traveller" may start conversations, "approver" may decide bookFlight calls
(and make them sticky in a conversation for up to 30 minutes).
The API is described in docs/API.md.

With --config FILE it runs what the YAML file describes instead (agents,
approval rules, store, authentication; see examples/serve.yaml) and
refuses to start, listing every problem with its line and column, when
the file is invalid. --data is then unused.

Flags:
`

// shutdownTimeout bounds how long serve waits for requests in flight when
// it is asked to stop.
const shutdownTimeout = 10 * time.Second

func runServe(ctx context.Context, args []string, e *env) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprint(e.stderr, serveUsage)
		fs.PrintDefaults()
	}
	addr := fs.String("addr", "127.0.0.1:8080", "listen on this `address`")
	data := fs.String("data", ".toolgate-data", "keep the embedded store in this `directory`")
	config := fs.String("config", "", "run the service the YAML `file` describes instead of the embedded demo")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(e.stderr, "toolgate serve: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	// Unless GOGC says otherwise, collect less often (see gcPercent).
	tuneGC()
	var err error
	if *config != "" {
		err = serveConfig(ctx, *addr, *config, e)
	} else {
		err = serveDemo(ctx, *addr, *data, e)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "toolgate serve: %v\n", err)
		return 1
	}
	return 0
}

// demoUser is a principal of the embedded demo with its API key.
type demoUser struct {
	principal toolgate.Principal
	key       string
}

// serveDemo serves the flight demo on a SQLite store in data.
func serveDemo(ctx context.Context, addr, data string, e *env) error {
	if err := os.MkdirAll(data, 0o700); err != nil {
		return err
	}
	dbPath := filepath.Join(data, "toolgate.db")
	store, err := sqlite.Open(ctx, dbPath, nil)
	if err != nil {
		return err
	}
	defer store.Close()
	recs, err := store.Records(ctx)
	if err != nil {
		return err
	}
	// The audit log is in the same file too, each record written in the
	// transaction of the change it describes.
	auditLog := store.AuditLog()
	tools := &flightdemo.Tools{}
	tel := telemetry.New(nil)
	client := toolgate.NewClient(flightdemo.Model(), tools.Tools(), &toolgate.ClientOptions{
		Store:           store,
		SystemPrompt:    flightdemo.SystemPrompt,
		ModelMiddleware: []func(toolgate.ModelFunc) toolgate.ModelFunc{tel.ModelMiddleware(&telemetry.Model{Agent: "flights", Provider: "toolgate.scripted"})},
		ToolMiddleware:  []func(toolgate.ToolFunc) toolgate.ToolFunc{tel.ToolMiddleware("flights")},
	})
	users := []demoUser{
		{toolgate.Principal{ID: "traveller", Roles: []string{"traveller"}}, "tg_demo_" + rand.Text()},
		{toolgate.Principal{ID: "approver", Roles: []string{"approver"}}, "tg_demo_" + rand.Text()},
	}
	cfg := &server.Config{
		Agents: map[string]*server.Agent{"flights": {
			Client:         client,
			RequesterRoles: []string{"traveller"},
			// The approver may also let later bookings of the conversation
			// through for up to half an hour (a sticky approval).
			Approvals: []server.ApprovalRule{{Tools: []string{"bookFlight"}, Roles: []string{"approver"}, StickyMax: 30 * time.Minute}},
		}},
		Logger: slog.New(slog.NewTextHandler(e.stderr, nil)),
		Audit:  auditLog,
		// The server's records are in the same file: a restart keeps them.
		Records:   recs,
		Telemetry: tel,
	}
	for _, u := range users {
		cfg.APIKeys = append(cfg.APIKeys, server.APIKey{SHA256: server.HashAPIKey(u.key), Principal: u.principal})
	}
	return listenAndServe(ctx, addr, cfg, e, func(ln net.Addr) {
		fmt.Fprintf(e.stdout, "toolgate serve: listening on http://%s (store and audit log %s)\n", ln, dbPath)
		fmt.Fprintf(e.stdout, "DEMO: the flight agent on a scripted model, with demo users whose keys are new at every start:\n")
		for _, u := range users {
			fmt.Fprintf(e.stdout, "DEMO user %-9s (roles %v)  API key %s\n", u.principal.ID, u.principal.Roles, u.key)
		}
		fmt.Fprintf(e.stdout, "Open http://%s/ in a browser and sign in with a key: the approver's inbox is at /inbox.\n", ln)
		fmt.Fprintf(e.stdout, "Stop with Ctrl-C.\n")
	})
}

// serveConfig runs the service the configuration file at path describes.
func serveConfig(ctx context.Context, addr, path string, e *env) error {
	fc, err := serve.LoadConfig(path)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(e.stderr, nil))
	cfg, closeAll, err := serve.Build(ctx, fc, &serve.BuildOptions{Logger: logger})
	if err != nil {
		return err
	}
	defer closeAll()
	return listenAndServe(ctx, addr, cfg, e, func(ln net.Addr) {
		fmt.Fprintf(e.stdout, "toolgate serve: listening on http://%s (config %s)\n", ln, path)
		fmt.Fprintf(e.stdout, "Stop with Ctrl-C.\n")
	})
}

// listenAndServe serves cfg on addr until ctx is done, then shuts down
// gracefully; started is called once the listener is open.
func listenAndServe(ctx context.Context, addr string, cfg *server.Config, e *env, started func(net.Addr)) error {
	srv, err := server.New(cfg)
	if err != nil {
		return err
	}
	defer srv.Close()

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	turn := cfg.TurnTimeout
	if turn == 0 {
		turn = server.DefaultTurnTimeout
	}
	hs := &http.Server{
		Handler:           srv,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		// Past the turn timeout, so that a turn that times out is still
		// answered 504. Event streams extend their own write deadline
		// (http.ResponseController).
		WriteTimeout:   turn + 30*time.Second,
		IdleTimeout:    2 * time.Minute,
		MaxHeaderBytes: 64 << 10,
		ErrorLog:       slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn),
	}
	// Event streams last until the server closes: end them when the
	// shutdown begins, or it would wait for them.
	hs.RegisterOnShutdown(func() { srv.Close() })
	started(ln.Addr())

	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	fmt.Fprintf(e.stdout, "toolgate serve: stopped\n")
	return nil
}
