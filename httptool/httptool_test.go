package httptool_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/httptool"
	"github.com/toolgate/toolgate/provider/scripted"
	"github.com/toolgate/toolgate/store/memory"
)

// seen is one request as the test server received it.
type seen struct {
	Method, Path, Query, Body string
	Header                    http.Header
}

// recorder starts a server that records each request on a channel and
// answers with handler (nil: 200 "ok").
func recorder(t *testing.T, handler http.HandlerFunc) (*httptest.Server, <-chan seen) {
	t.Helper()
	ch := make(chan seen, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		ch <- seen{Method: r.Method, Path: r.URL.EscapedPath(), Query: r.URL.RawQuery, Body: string(b), Header: r.Header.Clone()}
		if handler == nil {
			io.WriteString(w, "ok")
			return
		}
		handler(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, ch
}

func newTool(t *testing.T, o *httptool.Options) *toolgate.Tool {
	t.Helper()
	if o.Name == "" {
		o.Name = "probe"
	}
	tool, err := httptool.New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return tool
}

func call(t *testing.T, tool *toolgate.Tool, args string) (string, error) {
	t.Helper()
	return tool.Call(t.Context(), &toolgate.ToolRequest{Call: toolgate.ToolCall{ID: "c1", Name: tool.Name(), Arguments: args}, Key: "c1", Arguments: json.RawMessage(args)})
}

func TestArguments(t *testing.T) {
	for _, tc := range []struct {
		name, method, path, args string
		want                     seen
	}{
		{"post body", "", "/orders", `{"order":"A-1","qty":2}`, seen{Method: "POST", Path: "/orders", Body: `{"order":"A-1","qty":2}`}},
		{"put placeholder", "PUT", "/orders/{order}", `{"order":"A/1 x","note":"n"}`, seen{Method: "PUT", Path: "/orders/A%2F1%20x", Body: `{"order":"A/1 x","note":"n"}`}},
		{"get query", "GET", "/flights/{flight}/status", `{"flight":"VX205","day":3,"full":true,"tags":["a"],"skip":null}`,
			seen{Method: "GET", Path: "/flights/VX205/status", Query: "day=3&full=true&tags=%5B%22a%22%5D"}},
		{"delete", "DELETE", "/holds/{id}", `{"id":7}`, seen{Method: "DELETE", Path: "/holds/7"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, ch := recorder(t, nil)
			tool := newTool(t, &httptool.Options{URL: srv.URL + tc.path, Method: tc.method})
			out, err := call(t, tool, tc.args)
			if err != nil || out != "ok" {
				t.Fatalf("call = %q, %v; want ok", out, err)
			}
			got := <-ch
			got.Header = nil
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("request (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHeaders(t *testing.T) {
	srv, ch := recorder(t, nil)
	tool := newTool(t, &httptool.Options{URL: srv.URL, Header: http.Header{"Authorization": {"Bearer s3cret"}, "X-Tenant": {"t1"}}})
	if _, err := call(t, tool, `{}`); err != nil {
		t.Fatal(err)
	}
	h := (<-ch).Header
	for k, want := range map[string]string{"Authorization": "Bearer s3cret", "X-Tenant": "t1", "Content-Type": "application/json", "User-Agent": "toolgate-httptool"} {
		if got := h.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if got := h.Get("Idempotency-Key"); got != "" {
		t.Errorf("a call that did not pause sent Idempotency-Key %q", got)
	}
}

// TestIdempotencyKey runs a tool that needs confirmation through a pause
// and a decision: the request carries the key the core gives the call.
func TestIdempotencyKey(t *testing.T) {
	for _, tc := range []struct{ header, sent string }{{"", "Idempotency-Key"}, {"X-Request-Key", "X-Request-Key"}, {"-", ""}} {
		t.Run(tc.header, func(t *testing.T) {
			srv, ch := recorder(t, nil)
			tool := newTool(t, &httptool.Options{Name: "refund", URL: srv.URL, IdempotencyHeader: tc.header, Metadata: toolgate.ToolMetadata{RequiresConfirmation: true}})
			model := scripted.New(
				scripted.Reply{ToolCalls: []toolgate.ToolCall{{ID: "c1", Name: "refund", Arguments: `{"order":"A-1"}`}}},
				scripted.Reply{Text: "done"},
			)
			store := memory.New()
			client := toolgate.NewClient(model, []*toolgate.Tool{tool}, &toolgate.ClientOptions{Store: store})
			ctx := t.Context()
			resp, err := client.Call(ctx, &toolgate.CallParams{ConversationID: "conv1", Input: "refund A-1"})
			if err != nil || !resp.Paused() {
				t.Fatalf("Call = %v, %v; want a pause", resp, err)
			}
			conv, err := store.Load(ctx, "conv1")
			if err != nil {
				t.Fatal(err)
			}
			pauseID := conv.Pause.ID
			if _, err := client.Resume(ctx, &toolgate.ResumeTurnParams{ConversationID: "conv1", PauseID: resp.PauseID, Decisions: []toolgate.Decision{toolgate.Allow(resp.Awaiting[0])}}); err != nil {
				t.Fatal(err)
			}
			h := (<-ch).Header
			want := toolgate.IdempotencyKey("conv1", pauseID, resp.Awaiting[0])
			if tc.sent == "" {
				if got := h.Get("Idempotency-Key"); got != "" {
					t.Errorf("Idempotency-Key = %q with the header switched off", got)
				}
				return
			}
			if got := h.Get(tc.sent); got != want {
				t.Errorf("%s = %q, want %q", tc.sent, got, want)
			}
		})
	}
}

// results returns the tool results the model was sent last.
func results(t *testing.T, model *scripted.Model) []toolgate.ToolResult {
	t.Helper()
	prompts := model.Prompts()
	msgs := prompts[len(prompts)-1].Messages
	if tm, ok := msgs[len(msgs)-1].(*toolgate.ToolMessage); ok {
		return tm.Results
	}
	t.Fatal("the model was sent no tool results")
	return nil
}

// TestErrorResults runs failing calls through a client: each becomes an
// error result for the model, and the turn completes.
func TestErrorResults(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // so that a dropped connection cancels r's context
		switch r.URL.Path {
		case "/500":
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, `{"error":"database down"}`)
		case "/slow":
			select {
			case <-release:
			case <-r.Context().Done():
			}
		case "/big":
			io.WriteString(w, strings.Repeat("x", 101))
		case "/redirect":
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
		default:
			io.WriteString(w, "ok")
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // runs first
	for _, tc := range []struct {
		name, path, args string
		opts             httptool.Options
		want             error
		content          string
	}{
		{name: "500", path: "/500", want: &httptool.StatusError{}, content: `HTTP 500 Internal Server Error: {"error":"database down"}`},
		{name: "timeout", path: "/slow", opts: httptool.Options{Timeout: 20 * time.Millisecond}, want: httptool.ErrTimeout, content: "timed out after 20ms"},
		{name: "too large", path: "/big", opts: httptool.Options{MaxResponseBytes: 100}, want: httptool.ErrResponseTooLarge, content: "more than 100 bytes"},
		{name: "redirect", path: "/redirect", want: &httptool.StatusError{}, content: "HTTP 302"},
		{name: "schema", path: "/ok", args: `{"order":5}`, want: toolgate.ErrInvalidArguments, content: "invalid arguments",
			opts: httptool.Options{InputSchema: &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"order": {Type: "string"}}}}},
		{name: "missing placeholder", path: "/orders/{order}", args: `{}`, want: httptool.ErrURLArgument, content: `the argument "order"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.opts
			o.Name, o.URL = "probe", srv.URL+tc.path
			tool := newTool(t, &o)
			args := tc.args
			if args == "" {
				args = `{}`
			}
			_, err := call(t, tool, args)
			var se *httptool.StatusError
			if errors.As(tc.want, &se) {
				if !errors.As(err, &se) {
					t.Fatalf("err = %v, want a StatusError", err)
				}
			} else if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}

			model := scripted.New(scripted.Reply{ToolCalls: []toolgate.ToolCall{{ID: "c1", Name: "probe", Arguments: args}}}, scripted.Reply{Text: "sorry"})
			client := toolgate.NewClient(model, []*toolgate.Tool{tool}, nil)
			resp, err := client.Call(t.Context(), &toolgate.CallParams{Input: "go"})
			if err != nil || resp.Text() != "sorry" {
				t.Fatalf("Call = %v, %v; want the turn to complete", resp, err)
			}
			r := results(t, model)[0]
			if r.Status != toolgate.ResultError || !strings.Contains(r.Content, tc.content) {
				t.Errorf("result = %v %q, want an error result containing %q", r.Status, r.Content, tc.content)
			}
		})
	}
}

func TestErrorBodyIsCapped(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
		io.WriteString(w, strings.Repeat("é", 2000))
	}))
	t.Cleanup(srv.Close)
	_, err := call(t, newTool(t, &httptool.Options{URL: srv.URL}), `{}`)
	var se *httptool.StatusError
	if !errors.As(err, &se) || se.StatusCode != 502 || len(se.Body) > 1<<10+3 || !strings.HasPrefix(se.Body, "éé") {
		t.Fatalf("err = %v, want a 502 with at most 1 KiB of the body", err)
	}
}

func TestSecretsStayOutOfErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(401) }))
	addr := srv.URL
	srv.Close() // refused connections
	o := &httptool.Options{URL: addr, Header: http.Header{"Authorization": {"Bearer s3cret"}}}
	_, err := call(t, newTool(t, o), `{}`)
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("err = %v, want an error without the header's value", err)
	}
	_, err = httptool.New(&httptool.Options{Name: "x", URL: addr, Header: http.Header{"Authorization": {"Bearer s3cret\r\nX: y"}}})
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("New = %v, want an error without the header's value", err)
	}
}

func TestTLS(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.TLS.PeerCertificates) == 0 {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		io.WriteString(w, "hello "+r.TLS.PeerCertificates[0].Subject.CommonName)
	}))
	srv.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	writePEM(t, ca, "CERTIFICATE", srv.Certificate().Raw)

	// Without the CA the server's certificate is refused.
	if _, err := call(t, newTool(t, &httptool.Options{URL: srv.URL}), `{}`); err == nil {
		t.Fatal("a self-signed server was accepted without its CA")
	}
	// With it, and with a client certificate, the call goes through.
	cert, key := clientCert(t, dir)
	tool := newTool(t, &httptool.Options{URL: srv.URL, TLS: &httptool.TLS{CAFile: ca, CertFile: cert, KeyFile: key}})
	if out, err := call(t, tool, `{}`); err != nil || out != "hello toolgate-test" {
		t.Fatalf("call = %q, %v; want hello toolgate-test", out, err)
	}
	// Insecure only when asked for.
	tool = newTool(t, &httptool.Options{URL: srv.URL, TLS: &httptool.TLS{InsecureSkipVerify: true}})
	if _, err := call(t, tool, `{}`); err == nil {
		t.Fatal("want 401 without a client certificate")
	}
}

// TestHostileOptions checks that bad options are refused with the field at
// fault, never a panic.
func TestHostileOptions(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.pem")
	os.WriteFile(junk, []byte("not pem"), 0o600)
	for _, tc := range []struct {
		name  string
		opts  *httptool.Options
		field string
	}{
		{"nil", nil, "name"},
		{"bad name", &httptool.Options{Name: "no spaces", URL: "https://x.example"}, "name"},
		{"no url", &httptool.Options{Name: "t"}, "url"},
		{"ftp", &httptool.Options{Name: "t", URL: "ftp://x.example/"}, "url"},
		{"no host", &httptool.Options{Name: "t", URL: "http:///path"}, "url"},
		{"placeholder in host", &httptool.Options{Name: "t", URL: "https://{tenant}.example.com/"}, "url"},
		{"stray brace", &httptool.Options{Name: "t", URL: "https://x.example/{a b}"}, "url"},
		{"credentials in url", &httptool.Options{Name: "t", URL: "https://u:p@x.example/"}, "url"},
		{"method", &httptool.Options{Name: "t", URL: "https://x.example", Method: "TRACE"}, "method"},
		{"lower-case method", &httptool.Options{Name: "t", URL: "https://x.example", Method: "get"}, "method"},
		{"header name", &httptool.Options{Name: "t", URL: "https://x.example", Header: http.Header{"Bad Header": {"v"}}}, "headers.Bad Header"},
		{"header value", &httptool.Options{Name: "t", URL: "https://x.example", Header: http.Header{"X": {"a\nb"}}}, "headers.X"},
		{"timeout", &httptool.Options{Name: "t", URL: "https://x.example", Timeout: -1}, "timeout"},
		{"size", &httptool.Options{Name: "t", URL: "https://x.example", MaxResponseBytes: -1}, "max_response_bytes"},
		{"idempotency header", &httptool.Options{Name: "t", URL: "https://x.example", IdempotencyHeader: "a:b"}, "idempotency_header"},
		{"idempotency header twice", &httptool.Options{Name: "t", URL: "https://x.example", Header: http.Header{"Idempotency-Key": {"k"}}}, "idempotency_header"},
		{"schema type", &httptool.Options{Name: "t", URL: "https://x.example", InputSchema: &jsonschema.Schema{Type: "string"}}, "input_schema"},
		{"schema ref", &httptool.Options{Name: "t", URL: "https://x.example", InputSchema: &jsonschema.Schema{Ref: "#/nowhere"}}, "input_schema"},
		{"tls on http", &httptool.Options{Name: "t", URL: "http://x.example", TLS: &httptool.TLS{}}, "tls."},
		{"ca file missing", &httptool.Options{Name: "t", URL: "https://x.example", TLS: &httptool.TLS{CAFile: filepath.Join(dir, "none.pem")}}, "tls.ca_file"},
		{"ca file junk", &httptool.Options{Name: "t", URL: "https://x.example", TLS: &httptool.TLS{CAFile: junk}}, "tls.ca_file"},
		{"cert without key", &httptool.Options{Name: "t", URL: "https://x.example", TLS: &httptool.TLS{CertFile: junk}}, "tls.cert_file"},
		{"bad key pair", &httptool.Options{Name: "t", URL: "https://x.example", TLS: &httptool.TLS{CertFile: junk, KeyFile: junk}}, "tls.cert_file"},
		{"insecure with ca", &httptool.Options{Name: "t", URL: "https://x.example", TLS: &httptool.TLS{CAFile: junk, InsecureSkipVerify: true}}, "tls.insecure_skip_verify"},
		{"client and tls", &httptool.Options{Name: "t", URL: "https://x.example", TLS: &httptool.TLS{}, Client: &http.Client{}}, "tls"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tool, err := httptool.New(tc.opts)
			var oe *httptool.OptionsError
			if !errors.As(err, &oe) || tool != nil {
				t.Fatalf("New = %v, %v; want an OptionsError", tool, err)
			}
			found := false
			for _, p := range oe.Problems {
				found = found || p.Field == tc.field
			}
			if !found {
				t.Errorf("problems %v name no field %q", oe.Problems, tc.field)
			}
		})
	}
}

// TestNonObjectArguments covers arguments that are JSON but no object.
func TestNonObjectArguments(t *testing.T) {
	srv, _ := recorder(t, nil)
	tool := newTool(t, &httptool.Options{URL: srv.URL})
	for _, args := range []string{`[]`, `"x"`, `null`, `3`} {
		if _, err := call(t, tool, args); !errors.Is(err, toolgate.ErrInvalidArguments) {
			t.Errorf("call(%s) = %v, want ErrInvalidArguments", args, err)
		}
	}
}

func TestCanceledContext(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	tool := newTool(t, &httptool.Options{URL: srv.URL})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := tool.Call(ctx, &toolgate.ToolRequest{Call: toolgate.ToolCall{Name: "probe"}, Arguments: json.RawMessage(`{}`)})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
