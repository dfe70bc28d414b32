package serve_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider/scripted"
	"github.com/toolgate/toolgate/serve"
	"github.com/toolgate/toolgate/server"
)

// mcpServersDir returns the directory of the npm MCP servers, as the tests
// of package mcptool find it: TOOLGATE_MCP_SERVERS or .cache/mcp-servers.
// Without the filesystem server (or node) the test fails under CI=true and
// is skipped otherwise.
func mcpServersDir(t *testing.T) string {
	t.Helper()
	missing := func(format string, a ...any) {
		t.Helper()
		if os.Getenv("CI") == "true" {
			t.Fatalf(format, a...)
		}
		t.Skipf(format+" (run .ci/run, or the npm install line in mcptool/npm_test.go)", a...)
	}
	dir := os.Getenv("TOOLGATE_MCP_SERVERS")
	if dir == "" {
		dir = filepath.Join("..", ".cache", "mcp-servers")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-filesystem", "dist", "index.js")); err != nil {
		missing("MCP server server-filesystem is not installed: %v", err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		missing("node is not installed: %v", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// filesAgent is validConfig with a second agent, files, over the npm
// filesystem server serving root, its write tools gated by confirm_tools
// alone (hints none, the metadata flag off).
func filesAgent(root string) string {
	return strings.Replace(validConfig, "store:\n", `	files:
		model:
			provider: scripted-demo
		mcp_servers:
			- name: fs
				command: node
				args: ["${TG_TEST_MCP_DIR}/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js", `+fmt.Sprintf("%q", root)+`]
				env: {TG_TEST_UNUSED: "1"}
				prefix: fs_
				confirm_tools: ["fs_write_*"]
				hints: none
				min_backoff: 50ms
				max_backoff: 1s
		confirmation:
			metadata: false
		requester_roles: [traveller]
		approvals:
			- tools: [fs_write_file]
				roles: [approver]
store:
`, 1)
}

// TestConfigMCPFilesystem serves an agent over the npm filesystem server
// through the HTTP API: its scripted model writes a file with
// fs_write_file, gated by confirm_tools alone (hints none, metadata off);
// the approver's allow writes it, a deny does not.
func TestConfigMCPFilesystem(t *testing.T) {
	t.Setenv("TG_TEST_MCP_DIR", mcpServersDir(t))
	root := t.TempDir()
	fc, err := serve.LoadConfig(writeConfig(t, filesAgent(root)))
	if err != nil {
		t.Fatal(err)
	}
	write := func(id, name string) scripted.Reply {
		args := fmt.Sprintf(`{"path":%q,"content":"hello from toolgate"}`, filepath.Join(root, name))
		return scripted.Reply{ToolCalls: []toolgate.ToolCall{{ID: id, Name: "fs_write_file", Arguments: args}}}
	}
	model := scripted.New(
		write("w_allowed", "allowed.txt"), scripted.Reply{Text: "written"},
		write("w_denied", "denied.txt"), scripted.Reply{Text: "not written"},
	)
	cfg, closeAll, err := serve.Build(context.Background(), fc, &serve.BuildOptions{
		Models: map[string]toolgate.Model{"files": model}, MCPStderr: io.Discard,
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
	f := &fixture{t: t, h: srv, srv: srv}

	for _, tc := range []struct {
		id, file, verdict, text string
	}{
		{"w_allowed", "allowed.txt", "allow", "written"},
		{"w_denied", "denied.txt", "deny", "not written"},
	} {
		file := filepath.Join(root, tc.file)
		c := f.must(201, "POST", "/v1/conversations", exampleTravellerKey, `{"agent":"files"}`)
		conv := c["id"].(string)
		out := f.must(200, "POST", "/v1/conversations/"+conv+"/messages", exampleTravellerKey, `{"input":"write `+tc.file+`"}`)
		if out["status"] != "paused" {
			t.Fatalf("%s: turn %v, want paused", tc.file, out)
		}
		p := out["pause"].(map[string]any)
		if got := fmt.Sprint(p["awaiting"]); got != "["+tc.id+"]" {
			t.Fatalf("%s: awaiting %s, want [%s]", tc.file, got, tc.id)
		}
		if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s exists before the decision: %v", tc.file, err)
		}
		body := `{"decisions":[{"key":"` + tc.id + `","verdict":"` + tc.verdict + `"}]}`
		f.must(403, "POST", decisionsPath(conv, p["id"].(string)), exampleTravellerKey, body)
		out = f.must(200, "POST", decisionsPath(conv, p["id"].(string)), exampleApproverKey, body)
		if out["status"] != "completed" || out["text"] != tc.text {
			t.Errorf("%s: decision %v", tc.file, out)
		}
		b, err := os.ReadFile(file)
		switch {
		case tc.verdict == "allow" && (err != nil || string(b) != "hello from toolgate"):
			t.Errorf("allowed: got %q, %v; want the content written", b, err)
		case tc.verdict == "deny" && !errors.Is(err, os.ErrNotExist):
			t.Errorf("denied: the file exists (%q, %v)", b, err)
		}
	}
}

// TestConfigMCPBuildErrors: problems found only once the servers are
// connected come with the entry's position.
func TestConfigMCPBuildErrors(t *testing.T) {
	t.Setenv("TG_TEST_MCP_DIR", mcpServersDir(t))
	root := t.TempDir()
	tests := []struct {
		name      string
		old, new  string
		line, col int
		path      string
		message   string
	}{
		{"clash between servers", "\t\t\t\tprefix: fs_\n", "\t\t\t\tprefix: fs_\n\t\t\t- name: again\n\t\t\t\tcommand: node\n\t\t\t\targs: [\"${TG_TEST_MCP_DIR}/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js\", " + fmt.Sprintf("%q", root) + "]\n\t\t\t\tprefix: fs_\n",
			26, 17, "agents.files.mcp_servers[1].prefix", `tools named as others: "fs_read_file" (a tool of MCP server "fs")`},
		{"unknown tool in a rule", "\t\t\t- tools: [fs_write_file]\n", "\t\t\t- tools: [fs_wipe_disk]\n", 31, 17, "agents.files.approvals[0].tools[0]", `"fs_wipe_disk" is not one of the agent's tools`},
		{"server that does not start", "command: node", "command: /nonexistent/node", 18, 9, "agents.files.mcp_servers[0]", `MCP server "fs"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := filesAgent(root)
			if !strings.Contains(text, tt.old) {
				t.Fatalf("%q is not in the config", tt.old)
			}
			fc, err := serve.LoadConfig(writeConfig(t, strings.Replace(text, tt.old, tt.new, 1)))
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = serve.Build(context.Background(), fc, &serve.BuildOptions{MCPStderr: io.Discard})
			var ce *serve.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("got %v, want a *ConfigError", err)
			}
			for _, p := range ce.Problems {
				if p.Line == tt.line && p.Column == tt.col && p.Path == tt.path && strings.Contains(p.Message, tt.message) {
					return
				}
			}
			t.Errorf("got problems %+v, want one at %d:%d, path %q, saying %q", ce.Problems, tt.line, tt.col, tt.path, tt.message)
		})
	}
}

// mcpEntry is an MCP server entry added to the agent of validConfig; the
// table below breaks it.
const mcpEntry = "\t\ttools: [flightStatus, bookFlight]\n" +
	"\t\tmcp_servers:\n" + // line 6
	"\t\t\t- name: fs\n" + // 7
	"\t\t\t\tcommand: node\n" + // 8
	"\t\t\t\targs: [server.js, /srv/notes]\n" + // 9
	"\t\t\t\tprefix: fs_\n" // 10

func TestConfigMCPInvalid(t *testing.T) {
	t.Setenv("TG_TEST_SET", "x")
	t.Setenv("TG_TEST_UNSET", "")
	base := strings.Replace(validConfig, "\t\ttools: [flightStatus, bookFlight]\n", mcpEntry, 1)
	if _, err := serve.LoadConfig(writeConfig(t, base)); err != nil {
		t.Fatalf("the base config: %v", err)
	}
	tests := []struct {
		name      string
		old, new  string // base with old replaced by new
		line, col int
		path      string
		message   string
	}{
		{"both command and url", "\t\t\t\tprefix: fs_\n", "\t\t\t\tprefix: fs_\n\t\t\t\turl: https://mcp.example.com/\n", 7, 9, "agents.flights.mcp_servers[0]", "not both"},
		{"neither command nor url", "\t\t\t\tcommand: node\n\t\t\t\targs: [server.js, /srv/notes]\n", "", 7, 9, "agents.flights.mcp_servers[0]", "required: command (stdio) or url"},
		{"bad glob", "\t\t\t\tprefix: fs_\n", "\t\t\t\tprefix: fs_\n\t\t\t\tconfirm_tools: [fs_read, \"fs_[\"]\n", 11, 34, "agents.flights.mcp_servers[0].confirm_tools[1]", `not a tool name or path.Match pattern: "fs_["`},
		{"bad hints", "\t\t\t\tprefix: fs_\n", "\t\t\t\tprefix: fs_\n\t\t\t\thints: sometimes\n", 11, 16, "agents.flights.mcp_servers[0].hints", `unknown hints "sometimes"`},
		{"missing env var in args", "[server.js, /srv/notes]", "[\"${TG_TEST_UNSET}/server.js\", /srv/notes]", 9, 16, "agents.flights.mcp_servers[0].args[0]", "TG_TEST_UNSET is not set"},
		{"missing env var in command", "command: node", "command: ${TG_TEST_UNSET}/node", 8, 18, "agents.flights.mcp_servers[0].command", "TG_TEST_UNSET is not set"},
		{"missing bearer token env var", "\t\t\t\tcommand: node\n\t\t\t\targs: [server.js, /srv/notes]\n", "\t\t\t\turl: https://mcp.example.com/\n\t\t\t\tbearer_token_env: TG_TEST_UNSET\n", 9, 27, "agents.flights.mcp_servers[0].bearer_token_env", "TG_TEST_UNSET is not set"},
		{"bad url", "\t\t\t\tcommand: node\n\t\t\t\targs: [server.js, /srv/notes]\n", "\t\t\t\turl: ftp://mcp.example.com/\n", 8, 14, "agents.flights.mcp_servers[0].url", "not an http or https URL"},
		{"headers with a command", "\t\t\t\tprefix: fs_\n", "\t\t\t\tprefix: fs_\n\t\t\t\theaders: {X-Team: a}\n", 7, 9, "agents.flights.mcp_servers[0]", "only for url"},
		{"env with a url", "\t\t\t\tcommand: node\n\t\t\t\targs: [server.js, /srv/notes]\n", "\t\t\t\turl: https://mcp.example.com/\n\t\t\t\tenv: {A: b}\n", 7, 9, "agents.flights.mcp_servers[0]", "only for command"},
		{"missing name", "\t\t\t- name: fs\n\t\t\t\tcommand: node\n", "\t\t\t- command: node\n", 7, 9, "agents.flights.mcp_servers[0].name", "required"},
		{"duplicate name", "\t\t\t\tprefix: fs_\n", "\t\t\t\tprefix: fs_\n\t\t\t- name: fs\n\t\t\t\tcommand: node\n", 11, 15, "agents.flights.mcp_servers[1].name", `another server of the agent is named "fs"`},
		{"unknown key", "\t\t\t\tprefix: fs_\n", "\t\t\t\tprefix: fs_\n\t\t\t\tconfirm: [fs_write_file]\n", 11, 9, "agents.flights.mcp_servers[0]", `unknown key "confirm"`},
		{"bad duration", "\t\t\t\tprefix: fs_\n", "\t\t\t\tprefix: fs_\n\t\t\t\tmin_backoff: soon\n", 11, 22, "agents.flights.mcp_servers[0].min_backoff", "want a duration"},
		{"max below min backoff", "\t\t\t\tprefix: fs_\n", "\t\t\t\tprefix: fs_\n\t\t\t\tmin_backoff: 2s\n\t\t\t\tmax_backoff: 1s\n", 12, 22, "agents.flights.mcp_servers[0].max_backoff", "less than min_backoff"},
		{"not a list", mcpEntry[strings.Index(mcpEntry, "\t\tmcp_servers"):], "\t\tmcp_servers: fs\n", 6, 18, "agents.flights.mcp_servers", "want a list"},
		{"built-in tool still unknown", "[flightStatus, bookFlight]", "[flightStatus, launchRocket]", 5, 27, "agents.flights.tools[1]", `unknown tool "launchRocket"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(base, tt.old) {
				t.Fatalf("%q is not in the base config", tt.old)
			}
			path := writeConfig(t, strings.Replace(base, tt.old, tt.new, 1))
			_, err := serve.LoadConfig(path)
			var ce *serve.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("got %v, want a *ConfigError", err)
			}
			for _, p := range ce.Problems {
				if p.Line == tt.line && p.Column == tt.col && p.Path == tt.path && strings.Contains(p.Message, tt.message) {
					if pos := fmt.Sprintf("%s:%d:%d: ", path, tt.line, tt.col); !strings.Contains(err.Error(), pos) {
						t.Errorf("error %q does not name %s", err, pos)
					}
					return
				}
			}
			t.Errorf("got problems %+v, want one at %d:%d, path %q, saying %q", ce.Problems, tt.line, tt.col, tt.path, tt.message)
		})
	}
}

// TestExampleMCPConfig loads examples/serve-mcp.yaml and builds it: the
// filesystem server connects and its tools are the agent's.
func TestExampleMCPConfig(t *testing.T) {
	t.Setenv("TOOLGATE_MCP_SERVERS", mcpServersDir(t))
	t.Setenv("TOOLGATE_NOTES_DIR", t.TempDir())
	t.Setenv("OPENAI_API_KEY", "sk-test")
	fc, err := serve.LoadConfig("../examples/serve-mcp.yaml")
	if err != nil {
		t.Fatal(err)
	}
	fc.Store.SQLite = filepath.Join(t.TempDir(), "toolgate.db")
	model := scripted.New(scripted.Reply{Text: "nothing to do"})
	cfg, closeAll, err := serve.Build(context.Background(), fc, &serve.BuildOptions{
		Models: map[string]toolgate.Model{"notes": model}, MCPStderr: io.Discard,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := closeAll(); err != nil {
			t.Error(err)
		}
	}()
	if cfg.Agents["notes"] == nil {
		t.Fatalf("agents %v", cfg.Agents)
	}
}
