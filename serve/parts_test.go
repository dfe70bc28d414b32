package serve_test

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/serve"
)

// TestConfigFiles: the file limits and privacy.refuse_files of the file
// reach the server.
func TestConfigFiles(t *testing.T) {
	t.Setenv("TG_TEST_VAULT_KEY", strings.Repeat("5a", 32))
	text := strings.Replace(validConfig, "store:\n", "max_file_bytes: 16\nmax_message_file_bytes: 20\nstore:\n", 1)
	fc, err := serve.LoadConfig(writeConfig(t, text))
	if err != nil {
		t.Fatal(err)
	}
	f := build(t, fc)
	file := func(n int) string {
		return `{"type":"file","media_type":"image/png","data":"` + base64.StdEncoding.EncodeToString(make([]byte, n)) + `"}`
	}
	conv := f.must(201, "POST", "/v1/conversations", exampleTravellerKey, `{}`)["id"].(string)
	if code, body := f.raw("POST", "/v1/conversations/"+conv+"/messages", exampleTravellerKey, `{"input":"see","parts":[`+file(17)+`]}`); code != 413 || !strings.Contains(body, "file_too_large") {
		t.Errorf("a file above max_file_bytes: %d %s", code, body)
	}
	if code, body := f.raw("POST", "/v1/conversations/"+conv+"/messages", exampleTravellerKey, `{"input":"see","parts":[`+file(12)+`,`+file(12)+`]}`); code != 413 || !strings.Contains(body, "message_too_large") {
		t.Errorf("files above max_message_file_bytes: %d %s", code, body)
	}

	strict := strings.Replace(validConfig, "\t\trequester_roles", "\t\tprivacy:\n\t\t\tenabled: true\n\t\t\tvault_key_env: TG_TEST_VAULT_KEY\n\t\t\trefuse_files: true\n\t\trequester_roles", 1)
	if fc, err = serve.LoadConfig(writeConfig(t, strict)); err != nil {
		t.Fatal(err)
	}
	f = build(t, fc)
	conv = f.must(201, "POST", "/v1/conversations", exampleTravellerKey, `{}`)["id"].(string)
	if code, body := f.raw("POST", "/v1/conversations/"+conv+"/messages", exampleTravellerKey, `{"input":"see","parts":[`+file(8)+`]}`); code != 422 || !strings.Contains(body, "unscanned_file") {
		t.Errorf("a file with privacy.refuse_files: %d %s", code, body)
	}

	for _, bad := range []string{"max_file_bytes: -1\n", "max_message_file_bytes: -1\n"} {
		if _, err := serve.LoadConfig(writeConfig(t, strings.Replace(validConfig, "store:\n", bad+"store:\n", 1))); err == nil || !strings.Contains(err.Error(), "must not be negative") {
			t.Errorf("%q: got %v, want a problem", bad, err)
		}
	}
	off := strings.Replace(validConfig, "\t\trequester_roles", "\t\tprivacy:\n\t\t\trefuse_files: true\n\t\trequester_roles", 1)
	if _, err := serve.LoadConfig(writeConfig(t, off)); err == nil || !strings.Contains(err.Error(), "enabled is not true") {
		t.Errorf("refuse_files without privacy: got %v, want a problem", err)
	}
}

func TestConfigShowReasoning(t *testing.T) {
	text := strings.Replace(validConfig, "\t\trequester_roles", "\t\tshow_reasoning: true\n\t\trequester_roles", 1)
	fc, err := serve.LoadConfig(writeConfig(t, text))
	if err != nil {
		t.Fatal(err)
	}
	cfg, closeStore, err := serve.Build(context.Background(), fc, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeStore()
	if !cfg.Agents["flights"].ShowReasoning {
		t.Error("show_reasoning did not reach the agent")
	}
}
