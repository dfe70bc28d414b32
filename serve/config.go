package serve

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"go.yaml.in/yaml/v3"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/audit"
	auditsqlite "github.com/toolgate/toolgate/audit/sqlite"
	"github.com/toolgate/toolgate/authz"
	"github.com/toolgate/toolgate/authz/cedar"
	"github.com/toolgate/toolgate/httptool"
	"github.com/toolgate/toolgate/internal/confcheck"
	"github.com/toolgate/toolgate/internal/flightdemo"
	"github.com/toolgate/toolgate/mcptool"
	"github.com/toolgate/toolgate/privacy"
	"github.com/toolgate/toolgate/provider/anthropic"
	"github.com/toolgate/toolgate/provider/gemini"
	"github.com/toolgate/toolgate/provider/openai"
	"github.com/toolgate/toolgate/records"
	"github.com/toolgate/toolgate/server"
	"github.com/toolgate/toolgate/store/postgres"
	"github.com/toolgate/toolgate/store/sqlite"
	"github.com/toolgate/toolgate/telemetry"
	"github.com/toolgate/toolgate/webhook"
)

// FileConfig is a configuration file of the service, as [LoadConfig]
// reads and checks it; [Build] turns it into a [server.Config]. The keys of the
// file are the yaml tags of the fields. See examples/serve.yaml.
//
// A FileConfig is not safe for concurrent modification; [Build] only reads
// it.
type FileConfig struct {
	// Agents are the agents by name. At least one is required.
	Agents map[string]*AgentSpec `yaml:"agents"`
	// Store is where every agent keeps its conversations. Required.
	Store StoreSpec `yaml:"store"`
	// Authentication says who may call the service. Required: API keys,
	// OIDC or both.
	Authentication AuthSpec `yaml:"authentication"`
	// ReadAllRoles is [server.Config.ReadAllRoles].
	ReadAllRoles []string `yaml:"read_all_roles"`
	// MaxBodyBytes is [server.Config.MaxBodyBytes].
	MaxBodyBytes int64 `yaml:"max_body_bytes"`
	// MaxFileBytes is [server.Config.MaxFileBytes].
	MaxFileBytes int64 `yaml:"max_file_bytes"`
	// MaxMessageFileBytes is [server.Config.MaxMessageFileBytes].
	MaxMessageFileBytes int64 `yaml:"max_message_file_bytes"`
	// PauseTTL is [server.Config.PauseTTL]: how long a pause waits for a
	// decision, such as "30m". 0: pauses never expire.
	PauseTTL time.Duration `yaml:"pause_ttl"`
	// IdempotencyTTL is [server.Config.IdempotencyTTL]: how long the
	// outcome of a request sent with an Idempotency-Key answers retries,
	// such as "24h". 0: [server.DefaultIdempotencyTTL].
	IdempotencyTTL time.Duration `yaml:"idempotency_ttl"`
	// Audit says where the audit log is kept and who may read it. Zero:
	// beside the store, see [AuditSpec].
	Audit AuditSpec `yaml:"audit"`
	// ClaimLease is [server.Config.ClaimLease], a Go duration such as "5m".
	ClaimLease time.Duration `yaml:"claim_lease"`
	// Timeouts bound the handling of requests. Zero: the defaults.
	Timeouts TimeoutsSpec `yaml:"timeouts"`
	// Metrics configures GET /metrics. Zero: served without
	// authentication.
	Metrics MetricsSpec `yaml:"metrics"`
	// MaxDenyMessage is [Config.MaxDenyMessage].
	MaxDenyMessage int `yaml:"max_deny_message"`
	// MaxEditedArguments is [Config.MaxEditedArguments].
	MaxEditedArguments int `yaml:"max_edited_arguments"`
	// Identities is [Config.Identities].
	Identities map[string]string `yaml:"identities"`
	// CaseInsensitiveIDs is [Config.CaseInsensitiveIDs].
	CaseInsensitiveIDs bool `yaml:"case_insensitive_ids"`
	// IdentitySources is [server.Config.IdentitySources]: by "api_keys"
	// or an OIDC issuer, such as {case_insensitive: true}.
	IdentitySources map[string]server.IdentitySource `yaml:"identity_sources"`
	// PublicURL is [server.Config.PublicURL]: the service's address as
	// people reach it, for the links in webhooks. "": no links.
	PublicURL string `yaml:"public_url"`
	// Webhooks announce paused, decided and expired pauses. Zero: none.
	Webhooks WebhooksSpec `yaml:"webhooks"`

	file string              // as given to LoadConfig
	dir  string              // relative paths in the file are relative to it
	pos  map[string]position // where each value is, by key path
}

// WebhooksSpec is the webhooks section of a file (package webhook).
type WebhooksSpec struct {
	// Endpoints receive the webhooks. nil: no webhooks.
	Endpoints []WebhookEndpointSpec `yaml:"endpoints"`
	// MaxAttempts is [webhook.Options.MaxAttempts]. 0: 12.
	MaxAttempts int `yaml:"max_attempts"`
	// MinBackoff and MaxBackoff are [webhook.Options.MinBackoff] and
	// MaxBackoff. 0: 1s and 10m.
	MinBackoff time.Duration `yaml:"min_backoff"`
	MaxBackoff time.Duration `yaml:"max_backoff"`
	// Timeout is [webhook.Options.Timeout]. 0: 10s.
	Timeout time.Duration `yaml:"timeout"`
	// Roles is [server.Config.WebhookRoles]: who may read the delivery
	// log. nil: nobody.
	Roles []string `yaml:"roles"`
}

// WebhookEndpointSpec is one receiver of webhooks.
type WebhookEndpointSpec struct {
	// Name is [webhook.Endpoint.Name]. Required.
	Name string `yaml:"name"`
	// URL is [webhook.Endpoint.URL]; it is never logged. Required.
	URL string `yaml:"url"`
	// SecretEnv is the environment variable holding the signing secret
	// ("whsec_" and base64); it must be set when the file is loaded.
	// Required.
	SecretEnv string `yaml:"secret_env"`
	// Types is [webhook.Endpoint.Types]: pause.paused, pause.decided,
	// pause.expired. nil: all three.
	Types []string `yaml:"types"`
}

// options returns the [webhook.Options] of the spec.
func (w *WebhooksSpec) options(logger *slog.Logger) *webhook.Options {
	o := &webhook.Options{MaxAttempts: w.MaxAttempts, MinBackoff: w.MinBackoff, MaxBackoff: w.MaxBackoff, Timeout: w.Timeout, Logger: logger}
	for _, e := range w.Endpoints {
		o.Endpoints = append(o.Endpoints, webhook.Endpoint{Name: e.Name, URL: e.URL, Secret: os.Getenv(e.SecretEnv), Types: slices.Clone(e.Types)})
	}
	return o
}

// webhookTypes are the types an endpoint may ask for.
var webhookTypes = []string{server.WebhookPaused, server.WebhookDecided, server.WebhookExpired}

// check adds the problems of the webhooks section.
func (w *WebhooksSpec) check(bad func(path, format string, args ...any), env func(path, name string)) {
	if w.Endpoints == nil {
		if w.MaxAttempts != 0 || w.MinBackoff != 0 || w.MaxBackoff != 0 || w.Timeout != 0 || w.Roles != nil {
			bad("webhooks", "webhook settings given but no endpoints")
		}
		return
	}
	for i, e := range w.Endpoints {
		p := fmt.Sprintf("webhooks.endpoints[%d]", i)
		if e.SecretEnv == "" {
			bad(p+".secret_env", "required: the environment variable holding the signing secret")
		} else {
			env(p+".secret_env", e.SecretEnv)
		}
		for j, t := range e.Types {
			if !slices.Contains(webhookTypes, t) {
				bad(fmt.Sprintf("%s.types[%d]", p, j), "unknown type %q (want %s)", t, strings.Join(webhookTypes, ", "))
			}
		}
	}
	for _, pr := range w.options(nil).Check() {
		field, msg := pr.Field, pr.Message
		var i int
		if n, _ := fmt.Sscanf(field, "endpoints[%d].secret", &i); n == 1 && strings.HasSuffix(field, ".secret") {
			// Secrets come from secret_env, whose problems are reported
			// above when it is unset.
			env := w.Endpoints[i].SecretEnv
			if env == "" || os.Getenv(env) == "" {
				continue
			}
			field, msg = field+"_env", env+": "+msg
		}
		bad("webhooks."+field, "%s", msg)
	}
}

// AgentSpec describes one agent.
type AgentSpec struct {
	// Model is the model the agent runs on. Required.
	Model ModelSpec `yaml:"model"`
	// SystemPrompt is [toolgate.ClientOptions.SystemPrompt]. "": none.
	SystemPrompt string `yaml:"system_prompt"`
	// Tools name the agent's tools among the built-in ones:
	// "flightStatus" and "bookFlight" (bookFlight's metadata requires
	// confirmation). nil: no tools.
	Tools []string `yaml:"tools"`
	// Confirmation says which calls wait for a person's decision.
	Confirmation ConfirmationSpec `yaml:"confirmation"`
	// Authorization guards the agent's tools with Cedar policies. Zero: no
	// authorization.
	Authorization AuthorizationSpec `yaml:"authorization"`
	// Privacy keeps personal data from the model. Zero: off.
	Privacy PrivacySpec `yaml:"privacy"`
	// RequesterRoles is [server.Agent.RequesterRoles].
	RequesterRoles []string `yaml:"requester_roles"`
	// RevealRoles is [server.Agent.RevealRoles]; it needs privacy.enabled.
	RevealRoles []string `yaml:"reveal_roles"`
	// ShowReasoning is [server.Agent.ShowReasoning]: the model's readable
	// reasoning is shown in the agent's views. false: never shown.
	ShowReasoning bool `yaml:"show_reasoning"`
	// Approvals is [server.Agent.Approvals]; the tools they name must be the
	// agent's.
	Approvals []server.ApprovalRule `yaml:"approvals"`
	// MaxRounds is [toolgate.ClientOptions.MaxRounds]. 0: its default.
	MaxRounds int `yaml:"max_rounds"`
	// Concurrency is [toolgate.ClientOptions.Concurrency]: how many allowed
	// calls of one model reply run at once. Calls launched together have
	// their starts recorded in one durable write (the first with the
	// claim), so a reply of two calls decided together costs one write
	// transaction fewer than when they run one after the other. Only for
	// tools that may run side by side. 0 or 1: one at a time.
	Concurrency int `yaml:"concurrency"`
	// PauseTTL is [server.Agent.PauseTTL]: it overrides the file's pause_ttl for
	// this agent. 0: the file's; "-1s" (any negative value): the agent's
	// pauses never expire.
	PauseTTL time.Duration `yaml:"pause_ttl"`
	// MCPServers are MCP servers whose tools the agent also has. [Build]
	// connects to each and lists its tools once; the agent keeps that set
	// (a server's later list changes reach a new build only). Their names
	// may be used wherever the agent's tools are named (confirmation,
	// privacy disclosures, approvals); Build checks them. nil: none.
	MCPServers []MCPServerSpec `yaml:"mcp_servers"`
	// HTTPTools are tools that call HTTP endpoints (package httptool),
	// which the agent has besides its built-in and MCP tools. Their names
	// may be used wherever the agent's tools are named. nil: none.
	HTTPTools []HTTPToolSpec `yaml:"http_tools"`
}

// HTTPToolSpec is one HTTP tool of an agent: [httptool.Options] in a
// configuration file. [LoadConfig] checks every field, reads the TLS
// files and requires the environment variables the headers name.
type HTTPToolSpec struct {
	// Name is [httptool.Options.Name]: unique among the agent's tools.
	// Required.
	Name string `yaml:"name"`
	// Description is [httptool.Options.Description].
	Description string `yaml:"description"`
	// InputSchema is [httptool.Options.InputSchema], a JSON schema written
	// in YAML (or JSON): {type: object, properties: {...}, required: [...]}.
	// Keywords that are not JSON schema keywords are refused. nil: any
	// object.
	InputSchema *jsonschema.Schema `yaml:"input_schema"`
	// URL is [httptool.Options.URL]: http or https, with {name}
	// placeholders in the path. Required.
	URL string `yaml:"url"`
	// Method is [httptool.Options.Method]. "": POST.
	Method string `yaml:"method"`
	// Headers are sent with every request. In a value, ${NAME} is replaced
	// by the environment variable NAME, which must be set when the file is
	// loaded: put secrets there, as in "Bearer ${CRM_TOKEN}", never in
	// the file. Values are never logged. nil: none.
	Headers map[string]string `yaml:"headers"`
	// Timeout is [httptool.Options.Timeout]. 0: 30s.
	Timeout time.Duration `yaml:"timeout"`
	// IdempotencyHeader is [httptool.Options.IdempotencyHeader]: the
	// header carrying the idempotency key of a call that paused. "":
	// Idempotency-Key; "-": none.
	IdempotencyHeader string `yaml:"idempotency_header"`
	// MaxResponseBytes is [httptool.Options.MaxResponseBytes]. 0: 1 MiB.
	MaxResponseBytes int64 `yaml:"max_response_bytes"`
	// RequiresConfirmation makes every call wait for a person's decision
	// (the tool's metadata; see also confirmation.tools). false: the
	// agent's confirmation and approval settings decide.
	RequiresConfirmation bool `yaml:"requires_confirmation"`
	// TLS configures the connections to an https URL. Zero: the system's
	// certificate authorities, no client certificate.
	TLS HTTPTLSSpec `yaml:"tls"`
}

// HTTPTLSSpec is [httptool.TLS] in a configuration file; its paths are
// relative to the file.
type HTTPTLSSpec struct {
	// CAFile is a PEM file of the certificate authorities trusted instead
	// of the system's. "": the system's.
	CAFile string `yaml:"ca_file"`
	// CertFile and KeyFile are a PEM client certificate and its key
	// (mutual TLS): both or neither.
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
	// InsecureSkipVerify accepts any server certificate, for a test
	// server only; the service logs a warning at start-up. false:
	// certificates are verified.
	InsecureSkipVerify bool `yaml:"insecure_skip_verify"`
}

// options returns the [httptool.Options] of the spec, headers expanded;
// missing are the header names whose environment variables are not set.
func (h *HTTPToolSpec) options(fc *FileConfig) (o *httptool.Options, missing map[string][]string) {
	o = &httptool.Options{
		Name:              h.Name,
		Description:       h.Description,
		InputSchema:       h.InputSchema,
		Metadata:          toolgate.ToolMetadata{RequiresConfirmation: h.RequiresConfirmation},
		URL:               h.URL,
		Method:            h.Method,
		Timeout:           h.Timeout,
		IdempotencyHeader: h.IdempotencyHeader,
		MaxResponseBytes:  h.MaxResponseBytes,
	}
	if h.Headers != nil {
		o.Header = http.Header{}
		for _, k := range slices.Sorted(maps.Keys(h.Headers)) {
			v, miss := expandEnv(h.Headers[k])
			if len(miss) > 0 {
				if missing == nil {
					missing = map[string][]string{}
				}
				missing[k] = miss
			}
			o.Header[k] = []string{v}
		}
	}
	if t := h.TLS; t != (HTTPTLSSpec{}) {
		o.TLS = &httptool.TLS{InsecureSkipVerify: t.InsecureSkipVerify}
		for _, f := range []struct {
			from string
			to   *string
		}{{t.CAFile, &o.TLS.CAFile}, {t.CertFile, &o.TLS.CertFile}, {t.KeyFile, &o.TLS.KeyFile}} {
			if f.from != "" {
				*f.to = fc.resolve(f.from)
			}
		}
	}
	return o, missing
}

// MCPServerSpec is one MCP server of an agent (package mcptool): a command
// speaking MCP over stdio, or a streamable HTTP endpoint.
type MCPServerSpec struct {
	// Name names the server in messages and logs; unique among the
	// agent's servers. Required.
	Name string `yaml:"name"`
	// Command starts the server (stdio). Exactly one of Command and URL
	// is required. In Command and Args, ${NAME} is replaced by the value
	// of the environment variable NAME, which must be set when the file
	// is loaded; nothing else is expanded, and relative paths are relative
	// to the service's working directory, not to the file.
	Command string `yaml:"command"`
	// Args are the command's arguments. nil: none.
	Args []string `yaml:"args"`
	// Env holds variables added to the command's environment, which is
	// otherwise the service's. Values are literal. nil: none added.
	Env map[string]string `yaml:"env"`
	// URL is the server's streamable HTTP endpoint: http or https.
	URL string `yaml:"url"`
	// Headers are sent with every request to URL. nil: none.
	Headers map[string]string `yaml:"headers"`
	// BearerTokenEnv is the environment variable holding a token sent as
	// "Authorization: Bearer <token>" to URL; it must be set when the file
	// is loaded. "": none.
	BearerTokenEnv string `yaml:"bearer_token_env"`
	// Prefix is put before every tool name of the server
	// ([mcptool.Options.Prefix]). "": none.
	Prefix string `yaml:"prefix"`
	// ConfirmTools are tool names, or [path.Match] patterns, whose calls
	// always need confirmation, matched against the names the model sees
	// (prefix included). They apply even when the agent's
	// confirmation.metadata is false. nil: none.
	ConfirmTools []string `yaml:"confirm_tools"`
	// Hints says which tool annotations add confirmation: "destructive"
	// (destructiveHint), "not_read_only" (anything not annotated
	// readOnlyHint, and destructiveHint) or "none". Annotations never remove
	// confirmation. "": destructive.
	Hints string `yaml:"hints"`
	// MinBackoff and MaxBackoff bound the waits between reconnection
	// attempts after the server is lost ([mcptool.Options]). 0: 100ms and
	// 30s.
	MinBackoff time.Duration `yaml:"min_backoff"`
	MaxBackoff time.Duration `yaml:"max_backoff"`
}

// hintModes are the values of [MCPServerSpec.Hints].
var hintModes = map[string]mcptool.Hints{
	"":              mcptool.HintDestructive,
	"destructive":   mcptool.HintDestructive,
	"not_read_only": mcptool.HintNotReadOnly,
	"none":          mcptool.HintNone,
}

// envRef is a reference to an environment variable in a command line.
var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// expandEnv replaces the ${NAME} references of s; missing are the names
// whose variables are not set.
func expandEnv(s string) (expanded string, missing []string) {
	expanded = envRef.ReplaceAllStringFunc(s, func(ref string) string {
		name := ref[2 : len(ref)-1]
		v := os.Getenv(name)
		if v == "" && !slices.Contains(missing, name) {
			missing = append(missing, name)
		}
		return v
	})
	return expanded, missing
}

// ModelSpec names a model.
type ModelSpec struct {
	// Provider is "openai", "anthropic", "gemini" or "scripted-demo" (the
	// flight story's scripted model: no network, no key). Required.
	Provider string `yaml:"provider"`
	// Name is the provider's model name, such as "gpt-4.1-mini". Required
	// except for scripted-demo.
	Name string `yaml:"name"`
	// APIKeyEnv is the environment variable holding the API key; it must
	// be set when the file is loaded. "": OPENAI_API_KEY,
	// ANTHROPIC_API_KEY or GEMINI_API_KEY.
	APIKeyEnv string `yaml:"api_key_env"`
	// BaseURL is the provider's base URL: with provider openai, that of
	// any OpenAI-compatible server (vLLM, Ollama, LiteLLM, Azure OpenAI;
	// see docs/SERVICE.md). "": the environment variable OPENAI_BASE_URL,
	// ANTHROPIC_BASE_URL or GEMINI_BASE_URL when set, as for toolgate
	// demo, else the provider's default.
	BaseURL string `yaml:"base_url"`
}

// baseURLEnv are the environment variables of the providers' base URLs.
var baseURLEnv = map[string]string{
	providerOpenAI:    "OPENAI_BASE_URL",
	providerAnthropic: "ANTHROPIC_BASE_URL",
	providerGemini:    "GEMINI_BASE_URL",
}

// baseURL returns the base URL the model is reached at ("" for the
// provider's default) and where it comes from, for messages.
func (m ModelSpec) baseURL() (u, from string) {
	if m.BaseURL != "" {
		return m.BaseURL, "base_url"
	}
	if env := baseURLEnv[m.Provider]; env != "" {
		return os.Getenv(env), env
	}
	return "", ""
}

// ConfirmationSpec says which calls need a person's decision: those of
// the named tools, and those whose tool's metadata requires it unless the
// metadata switch is off.
type ConfirmationSpec struct {
	// Tools always need confirmation. nil: none beyond the metadata's.
	Tools []string `yaml:"tools"`
	// Metadata honours the tools' RequiresConfirmation flag. nil: true.
	Metadata *bool `yaml:"metadata"`
}

// AuthorizationSpec guards an agent with Cedar policies.
type AuthorizationSpec struct {
	// Cedar is a Cedar policy file, or a directory of them, relative to
	// the configuration file. "": no authorization.
	Cedar string `yaml:"cedar"`
}

// PrivacySpec configures the privacy guard of an agent (package privacy).
type PrivacySpec struct {
	// Enabled turns the guard on. false: off, and the other fields must
	// be empty.
	Enabled bool `yaml:"enabled"`
	// Disclosures grant, per tool, the entity types (such as
	// EMAIL_ADDRESS, or ALL) the tool receives as original values. A tool
	// not listed receives tokens only.
	Disclosures map[string][]string `yaml:"disclosures"`
	// Output is what the user sees: "tokens", "redact" or "block".
	// "": tokens.
	Output string `yaml:"output"`
	// VaultKeyEnv is the environment variable holding the 32-byte key
	// (hex or base64) that seals each conversation's vault in the store,
	// so that tokens survive a pause. Required when Enabled.
	VaultKeyEnv string `yaml:"vault_key_env"`
	// Detection chooses the recognizers, analyzers and minimum score.
	// Zero: every built-in and embedded type.
	Detection DetectionSpec `yaml:"detection"`
	// RefuseFiles is [privacy.GuardOptions.RefuseFiles]: messages with
	// files, which cannot be scanned, are refused (422 "unscanned_file").
	// false: files reach the model as they are.
	RefuseFiles bool `yaml:"refuse_files"`
}

// StoreSpec names the store: exactly one of SQLite and PostgresURLEnv.
type StoreSpec struct {
	// SQLite is the path of a SQLite database file, relative to the
	// configuration file; it is created when missing.
	SQLite string `yaml:"sqlite"`
	// PostgresURLEnv is the environment variable holding a PostgreSQL
	// connection string; it must be set when the file is loaded.
	PostgresURLEnv string `yaml:"postgres_url_env"`
	// PostgresSchema is [postgres.Options.Schema].
	PostgresSchema string `yaml:"postgres_schema"`
}

// AuditSpec configures the audit log (package audit), which [Build]
// always opens. By default it lives in the store's database, beside the
// conversations and the server's records (sqlite.Store.AuditLog,
// postgres.Store.AuditLog): one hash chain for every instance on the
// database, and each audit record written in the transaction of the
// change it describes.
type AuditSpec struct {
	// SQLite, when set, keeps the audit log in a SQLite file of its own
	// instead (package audit/sqlite), at this path relative to the
	// configuration file; it is created when missing. Its records are
	// then written apart from the store's transactions. "": in the
	// store's database.
	SQLite string `yaml:"sqlite"`
	// DigestKeyEnv is the environment variable holding a 32-byte key (hex
	// or base64) for keyed argument digests ([server.Config.AuditDigestKey]); it
	// must be set when the file is loaded. "": plain SHA-256 digests.
	DigestKeyEnv string `yaml:"digest_key_env"`
	// Roles is [server.Config.AuditRoles].
	Roles []string `yaml:"roles"`
}

// legacyAuditPath returns where builds before the audit log moved into
// the store's database kept it by default: beside a SQLite store, its
// path with the extension replaced by ".audit.db", or toolgate.audit.db in
// the configuration file's directory.
func (fc *FileConfig) legacyAuditPath() string {
	if fc.Store.SQLite != "" {
		p := fc.resolve(fc.Store.SQLite)
		return strings.TrimSuffix(p, filepath.Ext(p)) + ".audit.db"
	}
	return fc.resolve("toolgate.audit.db")
}

// TimeoutsSpec bounds the handling of requests.
type TimeoutsSpec struct {
	// Request is [server.Config.RequestTimeout]. 0: its default.
	Request time.Duration `yaml:"request"`
	// Turn is [server.Config.TurnTimeout]. 0: its default.
	Turn time.Duration `yaml:"turn"`
}

// MetricsSpec configures the metrics endpoint.
type MetricsSpec struct {
	// Disabled is [server.Config.DisableMetrics].
	Disabled bool `yaml:"disabled"`
	// Roles is [server.Config.MetricsRoles]. nil: no authentication.
	Roles []string `yaml:"roles"`
}

// AuthSpec says how callers authenticate.
type AuthSpec struct {
	// APIKeys is [server.Config.APIKeys]: SHA-256 hashes of keys, never keys.
	APIKeys []server.APIKey `yaml:"api_keys"`
	// OIDC accepts JWT bearer tokens of an OpenID Connect provider (see
	// [server.OIDC]) and, with its Login, lets browsers sign in to the web pages
	// through the provider. nil: none.
	OIDC *OIDCSpec `yaml:"oidc"`
}

// The providers of [ModelSpec.Provider].
const (
	providerOpenAI    = "openai"
	providerAnthropic = "anthropic"
	providerGemini    = "gemini"
	providerDemo      = "scripted-demo"
)

// providerNames are the gen_ai.provider.name of the spans, by provider.
var providerNames = map[string]string{
	providerOpenAI:    "openai",
	providerAnthropic: "anthropic",
	providerGemini:    "gcp.gemini",
	providerDemo:      "toolgate.scripted",
}

var defaultKeyEnv = map[string]string{
	providerOpenAI:    "OPENAI_API_KEY",
	providerAnthropic: "ANTHROPIC_API_KEY",
	providerGemini:    "GEMINI_API_KEY",
}

// builtinTools are the tools an agent may name.
var builtinTools = []string{"bookFlight", "flightStatus"}

// outputModes are the privacy output modes a file may name. Restore needs
// a per-principal grant the file cannot express yet.
var outputModes = map[string]privacy.OutputMode{
	"tokens": privacy.ModeTokens,
	"redact": privacy.ModeRedact,
	"block":  privacy.ModeBlock,
}

var entityTypes = []privacy.EntityType{
	privacy.EmailAddress, privacy.PhoneNumber, privacy.CreditCard, privacy.IBANCode, privacy.IPAddress,
	privacy.MACAddress, privacy.USSSN, privacy.URL, privacy.DomainName, privacy.Crypto, privacy.Secret,
	privacy.Person, privacy.Location, privacy.Organization, privacy.Address, privacy.DateTime, privacy.NRP,
	privacy.USDriverLicense, privacy.USPassport, privacy.USBankNumber, privacy.MedicalLicense, privacy.Generic,
	privacy.Age, privacy.Title,
}

// maxConfigBytes bounds the size of a configuration file.
const maxConfigBytes = 1 << 20

// LoadConfig reads the YAML configuration file at path and checks it:
// unknown keys, values of the wrong type, bad enumerations, missing
// required values, tools that are not built in, files and environment
// variables that do not exist. The error for an invalid file is a
// [*ConfigError] listing every problem with its line and column.
func LoadConfig(path string) (*FileConfig, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("serve: config: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxConfigBytes+1))
	if err != nil {
		return nil, fmt.Errorf("serve: config: %w", err)
	}
	if len(data) > maxConfigBytes {
		return nil, &ConfigError{File: path, Problems: []Problem{{Message: fmt.Sprintf("larger than %d bytes", maxConfigBytes)}}}
	}
	return ParseConfig(path, data)
}

// ParseConfig is [LoadConfig] for a file already read: name is the file's
// path, used in positions and to resolve relative paths.
func ParseConfig(name string, data []byte) (*FileConfig, error) {
	fc := &FileConfig{file: name, dir: filepath.Dir(name)}
	d := &decoder{pos: map[string]position{}, failed: map[string]bool{}}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		// The parser's message holds the line.
		return nil, &ConfigError{File: name, Problems: []Problem{{Message: strings.TrimPrefix(err.Error(), "yaml: ")}}}
	}
	var more yaml.Node
	if err := dec.Decode(&more); err == nil {
		d.problem(&more, "", "a second YAML document; want one")
	}
	if len(doc.Content) == 0 {
		return nil, &ConfigError{File: name, Problems: []Problem{{Message: "the file is empty"}}}
	}
	d.decode(doc.Content[0], reflect.ValueOf(fc).Elem(), "")
	fc.pos = d.pos
	fc.check(d)
	if len(d.problems) > 0 {
		slices.SortStableFunc(d.problems, func(a, b Problem) int {
			if a.Line != b.Line {
				return a.Line - b.Line
			}
			return a.Column - b.Column
		})
		return nil, &ConfigError{File: name, Problems: d.problems}
	}
	return fc, nil
}

// at returns the node-less position of path (or of its closest ancestor
// that has one) for a problem.
func (fc *FileConfig) at(path string) *yaml.Node {
	for {
		if p, ok := fc.pos[path]; ok {
			return &yaml.Node{Line: p.line, Column: p.column}
		}
		if path == "" {
			return nil
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			path = ""
		} else {
			path = path[:i]
		}
	}
}

// resolve returns a path of the file relative to the file's directory.
func (fc *FileConfig) resolve(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(fc.dir, p)
}

// check adds the problems of the decoded file to d.
func (fc *FileConfig) check(d *decoder) {
	bad := func(path, format string, args ...any) { d.problem(fc.at(path), path, format, args...) }
	env := func(path, name string) {
		if os.Getenv(name) == "" {
			bad(path, "the environment variable %s is not set", name)
		}
	}
	if len(fc.Agents) == 0 {
		bad("agents", "at least one agent is required")
	}
	for _, name := range slices.Sorted(maps.Keys(fc.Agents)) {
		a, p := fc.Agents[name], "agents."+name
		if a == nil {
			bad(p, "an agent needs at least a model")
			continue
		}
		m := a.Model
		switch m.Provider {
		case "":
			bad(p+".model.provider", "required: openai, anthropic, gemini or scripted-demo")
		case providerDemo:
			if m.Name != "" || m.APIKeyEnv != "" || m.BaseURL != "" {
				bad(p+".model", "scripted-demo takes no name, api_key_env or base_url")
			}
		case providerOpenAI, providerAnthropic, providerGemini:
			if m.Name == "" {
				bad(p+".model.name", "required: the provider's model name")
			}
			keyEnv := m.APIKeyEnv
			if keyEnv == "" {
				keyEnv = defaultKeyEnv[m.Provider]
			}
			env(p+".model.api_key_env", keyEnv)
			if base, from := m.baseURL(); base != "" {
				if u, err := url.Parse(base); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
					bad(p+".model.base_url", "%s: not an http or https URL", from)
				}
			}
		default:
			bad(p+".model.provider", "unknown provider %q (want openai, anthropic, gemini or scripted-demo)", m.Provider)
		}
		for i, t := range a.Tools {
			switch {
			case !slices.Contains(builtinTools, t):
				bad(fmt.Sprintf("%s.tools[%d]", p, i), "unknown tool %q (want one of %s)", t, strings.Join(builtinTools, ", "))
			case slices.Index(a.Tools, t) != i:
				bad(fmt.Sprintf("%s.tools[%d]", p, i), "tool %q is listed twice", t)
			}
		}
		httpNames := fc.checkHTTPTools(a, p, bad)
		agentTool := func(path, t string) {
			// With MCP servers, the agent's tools are known only once Build
			// has listed them; it checks the other names then.
			if !d.failed[p+".tools"] && !slices.Contains(a.Tools, t) && !slices.Contains(httpNames, t) && len(a.MCPServers) == 0 {
				bad(path, "%q is not one of the agent's tools", t)
			}
		}
		for i, t := range a.Confirmation.Tools {
			agentTool(fmt.Sprintf("%s.confirmation.tools[%d]", p, i), t)
		}
		if c := a.Authorization.Cedar; c != "" {
			if _, err := os.Stat(fc.resolve(c)); err != nil {
				bad(p+".authorization.cedar", "cannot read the policies: %v", err)
			}
		}
		pv := a.Privacy
		if _, ok := outputModes[pv.Output]; !ok && pv.Output != "" {
			bad(p+".privacy.output", "unknown output mode %q (want tokens, redact or block)", pv.Output)
		}
		for _, tool := range slices.Sorted(maps.Keys(pv.Disclosures)) {
			tp := p + ".privacy.disclosures." + tool
			agentTool(tp, tool)
			for i, et := range pv.Disclosures[tool] {
				if et != "ALL" && !slices.Contains(entityTypes, privacy.EntityType(et)) {
					bad(fmt.Sprintf("%s[%d]", tp, i), "unknown entity type %q (want ALL or a type such as EMAIL_ADDRESS)", et)
				}
			}
		}
		pv.Detection.check(p+".privacy.detection", bad)
		switch {
		case pv.Enabled && pv.VaultKeyEnv == "":
			bad(p+".privacy", "vault_key_env is required when privacy is enabled")
		case pv.Enabled:
			if k := os.Getenv(pv.VaultKeyEnv); k == "" {
				env(p+".privacy.vault_key_env", pv.VaultKeyEnv)
			} else if _, err := vaultKey(k); err != nil {
				bad(p+".privacy.vault_key_env", "%s: %v", pv.VaultKeyEnv, err)
			}
		case pv.Disclosures != nil || pv.Output != "" || pv.VaultKeyEnv != "" || pv.RefuseFiles || !pv.Detection.zero():
			bad(p+".privacy", "privacy settings given but enabled is not true")
		}
		if a.RevealRoles != nil && !pv.Enabled {
			bad(p+".reveal_roles", "reveal_roles need privacy.enabled: without privacy there are no tokens to reveal")
		}
		for i, r := range a.Approvals {
			for j, t := range r.Tools {
				agentTool(fmt.Sprintf("%s.approvals[%d].tools[%d]", p, i, j), t)
			}
			for _, rp := range confcheck.ApprovalRule(r.Approvers, r.StickyMax) {
				bad(fmt.Sprintf("%s.approvals[%d].%s", p, i, rp.Field), "%s", rp.Msg)
			}
		}
		if a.MaxRounds < 0 {
			bad(p+".max_rounds", "must not be negative")
		}
		if a.Concurrency < 0 {
			bad(p+".concurrency", "must not be negative")
		}
		fc.checkMCP(a, p, bad, env)
	}

	s := fc.Store
	switch {
	case s.SQLite == "" && s.PostgresURLEnv == "":
		bad("store", "required: sqlite (a file path) or postgres_url_env")
	case s.SQLite != "" && s.PostgresURLEnv != "":
		bad("store", "give sqlite or postgres_url_env, not both")
	case s.PostgresURLEnv != "":
		env("store.postgres_url_env", s.PostgresURLEnv)
	case s.PostgresSchema != "":
		bad("store.postgres_schema", "only with postgres_url_env")
	}

	au := fc.Authentication
	if len(au.APIKeys) == 0 && au.OIDC == nil {
		bad("authentication", "required: api_keys, oidc or both (otherwise nobody can call the service)")
	}
	hashes := map[string]bool{}
	for i, k := range au.APIKeys {
		p := fmt.Sprintf("authentication.api_keys[%d]", i)
		b, err := hex.DecodeString(k.SHA256)
		switch {
		case err != nil || len(b) != 32:
			bad(p+".sha256", "not a hex-encoded SHA-256 hash (64 hex digits)")
		case hashes[strings.ToLower(k.SHA256)]:
			bad(p+".sha256", "the same key as another entry")
		}
		hashes[strings.ToLower(k.SHA256)] = true
		if k.Principal.ID == "" {
			bad(p+".principal.id", "required")
		}
	}
	if o := au.OIDC; o != nil {
		p := "authentication.oidc"
		if o.Issuer == "" {
			bad(p+".issuer", "required")
		}
		if o.bearer() {
			if o.Audience == "" {
				bad(p+".audience", "required")
			}
			if u, err := url.Parse(o.JWKSURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
				bad(p+".jwks_url", "required: an http or https URL")
			}
		}
		if o.Login != nil {
			o.Login.check(p+".login", o.Issuer, bad, env)
		}
		for i, a := range o.Algorithms {
			if !slices.Contains(server.DefaultAlgorithms, a) {
				bad(fmt.Sprintf("%s.algorithms[%d]", p, i), "algorithm %q is not accepted (want one of %s)", a, strings.Join(server.DefaultAlgorithms, ", "))
			}
		}
	}
	if fc.MaxBodyBytes < 0 {
		bad("max_body_bytes", "must not be negative")
	}
	if fc.MaxFileBytes < 0 {
		bad("max_file_bytes", "must not be negative")
	}
	if fc.MaxMessageFileBytes < 0 {
		bad("max_message_file_bytes", "must not be negative")
	}
	if fc.PauseTTL < 0 {
		bad("pause_ttl", "must not be negative (leave it out or 0: pauses never expire)")
	}
	if fc.IdempotencyTTL < 0 {
		bad("idempotency_ttl", "must not be negative (leave it out or 0: a day)")
	}
	if k := fc.Audit.DigestKeyEnv; k != "" {
		if v := os.Getenv(k); v == "" {
			env("audit.digest_key_env", k)
		} else if _, err := vaultKey(v); err != nil {
			bad("audit.digest_key_env", "%s: %v", k, err)
		}
	}
	if fc.Timeouts.Request < 0 {
		bad("timeouts.request", "must not be negative")
	}
	if fc.Timeouts.Turn < 0 {
		bad("timeouts.turn", "must not be negative")
	}
	if fc.Metrics.Disabled && fc.Metrics.Roles != nil {
		bad("metrics.roles", "the metrics endpoint is disabled")
	}
	if fc.PublicURL != "" {
		if u, err := url.Parse(fc.PublicURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			bad("public_url", "want an http or https URL without credentials, query or fragment")
		}
	}
	fc.Webhooks.check(bad, env)
}

// checkMCP adds the problems of the MCP servers of agent a, whose key path
// is p.
func (fc *FileConfig) checkMCP(a *AgentSpec, p string, bad func(path, format string, args ...any), env func(path, name string)) {
	names := map[string]bool{}
	for i, m := range a.MCPServers {
		sp := fmt.Sprintf("%s.mcp_servers[%d]", p, i)
		switch {
		case m.Name == "":
			bad(sp+".name", "required: a name for the server")
		case names[m.Name]:
			bad(sp+".name", "another server of the agent is named %q", m.Name)
		}
		names[m.Name] = true
		switch {
		case m.Command == "" && m.URL == "":
			bad(sp, "required: command (stdio) or url (streamable HTTP)")
		case m.Command != "" && m.URL != "":
			bad(sp, "give command or url, not both")
		case m.Command != "":
			if m.Headers != nil || m.BearerTokenEnv != "" {
				bad(sp, "headers and bearer_token_env are only for url")
			}
			for _, n := range expandMissing(m.Command) {
				bad(sp+".command", "the environment variable %s is not set", n)
			}
			for j, arg := range m.Args {
				for _, n := range expandMissing(arg) {
					bad(fmt.Sprintf("%s.args[%d]", sp, j), "the environment variable %s is not set", n)
				}
			}
		default:
			if m.Args != nil || m.Env != nil {
				bad(sp, "args and env are only for command")
			}
			if u, err := url.Parse(m.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				bad(sp+".url", "not an http or https URL")
			}
			if m.BearerTokenEnv != "" {
				env(sp+".bearer_token_env", m.BearerTokenEnv)
			}
		}
		for _, k := range slices.Sorted(maps.Keys(m.Env)) {
			if strings.Contains(k, "=") {
				bad(sp+".env."+k, "a variable name must not contain =")
			}
		}
		for j, pat := range m.ConfirmTools {
			if _, err := path.Match(pat, ""); err != nil || pat == "" {
				bad(fmt.Sprintf("%s.confirm_tools[%d]", sp, j), "not a tool name or path.Match pattern: %q", pat)
			}
		}
		if _, ok := hintModes[m.Hints]; !ok {
			bad(sp+".hints", "unknown hints %q (want destructive, not_read_only or none)", m.Hints)
		}
		if m.MinBackoff < 0 {
			bad(sp+".min_backoff", "must not be negative")
		}
		if m.MaxBackoff < 0 {
			bad(sp+".max_backoff", "must not be negative")
		} else if m.MaxBackoff > 0 && m.MaxBackoff < m.MinBackoff {
			bad(sp+".max_backoff", "less than min_backoff")
		}
	}
}

// checkHTTPTools adds the problems of the HTTP tools of agent a, whose key
// path is p, and returns their names.
func (fc *FileConfig) checkHTTPTools(a *AgentSpec, p string, bad func(path, format string, args ...any)) []string {
	var names []string
	for i, h := range a.HTTPTools {
		hp := fmt.Sprintf("%s.http_tools[%d]", p, i)
		switch {
		case slices.Contains(builtinTools, h.Name):
			bad(hp+".name", "%q is the name of a built-in tool", h.Name)
		case slices.Contains(names, h.Name):
			bad(hp+".name", "another HTTP tool of the agent is named %q", h.Name)
		}
		names = append(names, h.Name)
		schemaKeywords(h.InputSchema, hp+".input_schema", bad)
		o, missing := h.options(fc)
		for _, k := range slices.Sorted(maps.Keys(missing)) {
			for _, n := range missing[k] {
				bad(hp+".headers."+k, "the environment variable %s is not set", n)
			}
		}
		for _, pr := range o.Check() {
			field := pr.Field
			if field == "tls." {
				field = "tls"
			}
			bad(hp+"."+field, "%s", pr.Message)
		}
	}
	return names
}

// schemaKeywords adds a problem for the unknown keywords of s and of the
// schemas of its properties and items, which are most likely typing
// mistakes ("requried").
func schemaKeywords(s *jsonschema.Schema, path string, bad func(path, format string, args ...any)) {
	if s == nil {
		return
	}
	if len(s.Extra) > 0 {
		bad(path, "unknown JSON schema keywords: %s", strings.Join(slices.Sorted(maps.Keys(s.Extra)), ", "))
	}
	for _, k := range slices.Sorted(maps.Keys(s.Properties)) {
		schemaKeywords(s.Properties[k], path+".properties."+k, bad)
	}
	schemaKeywords(s.Items, path+".items", bad)
}

func expandMissing(s string) []string {
	_, missing := expandEnv(s)
	return missing
}

// vaultKey decodes a 32-byte key given in hex or base64.
func vaultKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if b, err := hex.DecodeString(s); err == nil && len(b) == 32 {
		return b, nil
	}
	if b, err := base64.StdEncoding.DecodeString(s); err == nil && len(b) == 32 {
		return b, nil
	}
	return nil, errors.New("want 32 bytes in hex (64 digits) or base64")
}

// BuildOptions are what [Build] takes besides the file.
type BuildOptions struct {
	// Logger is [server.Config.Logger] and the clients' logger. nil:
	// [slog.Default].
	Logger *slog.Logger
	// Models replace the models of the named agents, which the file must
	// still give (to embed the service, or to test it with a scripted
	// model). A name that is no agent of the file is an error. nil: none.
	Models map[string]toolgate.Model
	// MCPStderr receives the standard error of the MCP servers started as
	// commands. nil: [os.Stderr].
	MCPStderr io.Writer
	// Telemetry records the agents' model calls and tool runs (the
	// clients get its middleware) and becomes [server.Config.Telemetry]. nil: a
	// new one, with a registry of its own and the global tracer provider.
	Telemetry *telemetry.Telemetry
}

// Build opens the store and the audit log (see [AuditSpec]) and builds the
// agents, the authentication and the rest of a [server.Config] from fc, checking
// it as [LoadConfig] does (fc may also be built by hand; relative paths
// are then relative to the working directory). The agents' authorizers
// are wrapped with [server.AuditAuthorizer]. It connects to the agents' MCP
// servers. With a Postgres store, [server.Config.Broker] is a broker on the
// store's database and schema (postgres.Store.NewBroker), so that the
// event streams of every instance built from the file see each other's
// events; with SQLite it is nil. The returned close function closes the
// servers, the broker, the store and the audit log; call it after the
// server is done. On
// error nothing is left open; problems of the file found only now (a Cedar
// policy that does not parse, a store that does not open) come as a
// [*ConfigError].
func Build(ctx context.Context, fc *FileConfig, opts *BuildOptions) (*server.Config, func() error, error) {
	if opts == nil {
		opts = &BuildOptions{}
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	// Check again: fc may have been changed, or built by hand, since.
	d := &decoder{pos: fc.pos, failed: map[string]bool{}}
	fc.check(d)
	if len(d.problems) > 0 {
		return nil, nil, &ConfigError{File: fc.file, Problems: d.problems}
	}
	cerr := &ConfigError{File: fc.file}
	bad := func(path string, err error) {
		n := fc.at(path)
		p := Problem{Path: path, Message: err.Error()}
		if n != nil {
			p.Line, p.Column = n.Line, n.Column
		}
		cerr.Problems = append(cerr.Problems, p)
	}

	var store interface {
		conversationVaultStore
		Records(context.Context) (records.Store, error)
		Close() error
	}
	var err error
	var broker *postgres.Broker // with a Postgres store: events cross instances
	if fc.Store.SQLite != "" {
		path := fc.resolve(fc.Store.SQLite)
		var s *sqlite.Store
		if err = os.MkdirAll(filepath.Dir(path), 0o700); err == nil {
			s, err = sqlite.Open(ctx, path, nil)
		}
		if err != nil {
			bad("store.sqlite", err)
		} else {
			store = s
		}
	} else {
		s, err := postgres.Open(ctx, os.Getenv(fc.Store.PostgresURLEnv), &postgres.Options{Schema: fc.Store.PostgresSchema})
		if err == nil {
			if broker, err = s.NewBroker(ctx, &postgres.BrokerOptions{Logger: logger}); err != nil {
				s.Close()
			}
		}
		if err != nil {
			bad("store.postgres_url_env", err)
		} else {
			store = s
		}
	}
	closeStore := func() error {
		if broker != nil {
			broker.Close()
		}
		return store.Close()
	}
	if store == nil {
		return nil, nil, cerr
	}
	recs, err := store.Records(ctx)
	if err != nil {
		bad("store", err)
		closeStore()
		return nil, nil, cerr
	}
	var (
		auditLog   = recs.(records.Transactional).AuditLog() // both stores of a file have one
		closeAudit = func() error { return nil }             // the store's own log closes with it
	)
	if fc.Audit.SQLite != "" {
		auditPath := fc.resolve(fc.Audit.SQLite)
		var l *auditsqlite.Log
		if err = os.MkdirAll(filepath.Dir(auditPath), 0o700); err == nil {
			l, err = auditsqlite.Open(ctx, auditPath, nil)
		}
		if err != nil {
			bad("audit.sqlite", err)
			closeStore()
			return nil, nil, cerr
		}
		auditLog, closeAudit = l, l.Close
	} else if p := fc.legacyAuditPath(); fileExists(p) {
		logger.WarnContext(ctx, "serve: the audit log is kept in the store's database; the file an earlier default kept it in is no longer written (set audit.sqlite to it to keep using it)", "file", p)
	}
	var digestKey []byte
	if k := fc.Audit.DigestKeyEnv; k != "" {
		digestKey, _ = vaultKey(os.Getenv(k)) // checked above
	}

	tel := opts.Telemetry
	if tel == nil {
		tel = telemetry.New(nil)
	}
	cfg := &server.Config{
		MaxMessageFileBytes: fc.MaxMessageFileBytes,
		Agents:              make(map[string]*server.Agent, len(fc.Agents)),
		APIKeys:             slices.Clone(fc.Authentication.APIKeys),
		ReadAllRoles:        slices.Clone(fc.ReadAllRoles),
		MaxBodyBytes:        fc.MaxBodyBytes,
		MaxFileBytes:        fc.MaxFileBytes,
		PauseTTL:            fc.PauseTTL,
		IdempotencyTTL:      fc.IdempotencyTTL,
		Logger:              logger,
		Audit:               auditLog,
		AuditDigestKey:      digestKey,
		AuditRoles:          slices.Clone(fc.Audit.Roles),
		Records:             recs,
		ClaimLease:          fc.ClaimLease,
		Telemetry:           tel,
		RequestTimeout:      fc.Timeouts.Request,
		TurnTimeout:         fc.Timeouts.Turn,
		DisableMetrics:      fc.Metrics.Disabled,
		MetricsRoles:        slices.Clone(fc.Metrics.Roles),

		MaxDenyMessage:     fc.MaxDenyMessage,
		MaxEditedArguments: fc.MaxEditedArguments,
		Identities:         maps.Clone(fc.Identities),
		CaseInsensitiveIDs: fc.CaseInsensitiveIDs,
		IdentitySources:    maps.Clone(fc.IdentitySources),
		PublicURL:          fc.PublicURL,
		WebhookRoles:       slices.Clone(fc.Webhooks.Roles),
	}
	for _, name := range slices.Sorted(maps.Keys(opts.Models)) {
		if _, ok := fc.Agents[name]; !ok {
			bad("agents", fmt.Errorf("BuildOptions.Models names %q, which is not an agent of the file", name))
		}
	}
	stderr := opts.MCPStderr
	if stderr == nil {
		stderr = os.Stderr
	}
	var servers []*mcptool.Server
	closeServers := func() error {
		var errs []error
		for _, s := range servers {
			errs = append(errs, s.Close())
		}
		return errors.Join(errs...)
	}
	for _, name := range slices.Sorted(maps.Keys(fc.Agents)) {
		a, p := fc.Agents[name], "agents."+name
		b := &agentBuild{ctx: ctx, fc: fc, name: name, a: a, p: p, store: store, logger: logger, stderr: stderr, bad: bad, model: opts.Models[name],
			audit: auditLog, digestKey: digestKey, tel: tel}
		client, err := b.client()
		servers = append(servers, b.servers...)
		if err != nil {
			continue
		}
		cfg.Agents[name] = &server.Agent{Client: client, RequesterRoles: slices.Clone(a.RequesterRoles), Approvals: slices.Clone(a.Approvals),
			Privacy: b.guard, RevealRoles: slices.Clone(a.RevealRoles), PauseTTL: a.PauseTTL, ShowReasoning: a.ShowReasoning}
	}
	if o := fc.Authentication.OIDC; o != nil && o.bearer() {
		v, err := server.NewOIDC(&o.OIDCOptions)
		if err != nil {
			bad("authentication.oidc", err)
		} else {
			cfg.Tokens = v
		}
	}
	if o := fc.Authentication.OIDC; o != nil && o.Login != nil {
		cfg.OIDCLogin = o.login()
	}
	if broker != nil {
		cfg.Broker = broker
	}
	closeWebhooks := func() error { return nil }
	if len(cerr.Problems) == 0 && fc.Webhooks.Endpoints != nil {
		sender, err := webhook.New(fc.Webhooks.options(logger))
		if err != nil {
			bad("webhooks", err)
		} else {
			cfg.Webhooks, closeWebhooks = sender, sender.Close
		}
	}
	if len(cerr.Problems) > 0 {
		closeServers()
		closeStore()
		closeAudit()
		return nil, nil, cerr
	}
	return cfg, func() error {
		return errors.Join(closeWebhooks(), closeServers(), closeStore(), closeAudit())
	}, nil
}

// fileExists reports whether a file is at path.
func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// conversationVaultStore is a store that also keeps privacy vaults, as
// both stores of a file do.
type conversationVaultStore interface {
	toolgate.ConversationStore
	privacy.VaultStore
}

// agentBuild builds the client of one agent.
type agentBuild struct {
	ctx    context.Context
	fc     *FileConfig
	name   string // the agent's name
	a      *AgentSpec
	p      string // the agent's key path
	store  conversationVaultStore
	logger *slog.Logger
	stderr io.Writer
	bad    func(string, error)
	model  toolgate.Model // nil: the file's
	// audit receives the refusals of the agent's authorizer.
	audit     audit.Log
	digestKey []byte
	tel       *telemetry.Telemetry

	servers []*mcptool.Server // connected, to be closed by the caller
	guard   *privacy.Guard    // the agent's privacy guard, or nil
}

// client builds the agent's client.
func (b *agentBuild) client() (*toolgate.Client, error) {
	fc, a, p, store, logger, bad := b.fc, b.a, b.p, b.store, b.logger, b.bad
	var model toolgate.Model
	var err error
	m := a.Model
	keyEnv := m.APIKeyEnv
	if keyEnv == "" {
		keyEnv = defaultKeyEnv[m.Provider]
	}
	key := os.Getenv(keyEnv)
	base, _ := m.baseURL()
	switch m.Provider {
	case providerDemo:
		model = flightdemo.Model()
	case providerOpenAI:
		model, err = openai.New(&openai.Options{Model: m.Name, APIKey: key, BaseURL: base})
	case providerAnthropic:
		model, err = anthropic.New(&anthropic.Options{Model: m.Name, APIKey: key, BaseURL: base})
	case providerGemini:
		model, err = gemini.New(&gemini.Options{Model: m.Name, APIKey: key, BaseURL: base})
	}
	if err != nil {
		bad(p+".model", err)
		return nil, err
	}
	if b.model != nil {
		model = b.model
	}

	demo := &flightdemo.Tools{}
	var tools []*toolgate.Tool
	for _, t := range demo.Tools() {
		if slices.Contains(a.Tools, t.Name()) {
			tools = append(tools, t)
		}
	}
	for i, h := range a.HTTPTools {
		o, _ := h.options(fc)
		t, err := httptool.New(o)
		if err != nil {
			bad(fmt.Sprintf("%s.http_tools[%d]", p, i), err)
			return nil, err
		}
		if h.TLS.InsecureSkipVerify {
			logger.Warn("serve: an HTTP tool accepts any server certificate (tls.insecure_skip_verify)", "agent", b.name, "tool", h.Name)
		}
		tools = append(tools, t)
	}
	mcpTools, policy, err := b.connectMCP()
	if err != nil {
		return nil, err
	}
	tools = append(tools, mcpTools...)
	if err := b.checkToolNames(tools); err != nil {
		return nil, err
	}
	opts := &toolgate.ClientOptions{
		Store:               store,
		SystemPrompt:        a.SystemPrompt,
		MaxRounds:           a.MaxRounds,
		Concurrency:         a.Concurrency,
		Logger:              logger,
		ModelMiddleware:     []func(toolgate.ModelFunc) toolgate.ModelFunc{b.tel.ModelMiddleware(&telemetry.Model{Agent: b.name, Provider: providerNames[m.Provider], Name: m.Name})},
		ToolMiddleware:      []func(toolgate.ToolFunc) toolgate.ToolFunc{b.tel.ToolMiddleware(b.name)},
		ConfirmTools:        slices.Clone(a.Confirmation.Tools),
		DisableMetadataFlag: a.Confirmation.Metadata != nil && !*a.Confirmation.Metadata,
		Policy:              policy,
	}
	if c := a.Authorization.Cedar; c != "" {
		policy, err := cedar.Load(fc.resolve(c))
		if err != nil {
			bad(p+".authorization.cedar", err)
			return nil, err
		}
		opts.Authorize = server.AuditAuthorizer(authz.NewGuard(policy, nil).Begin, b.audit, b.digestKey)
	}
	if pv := a.Privacy; pv.Enabled {
		key, err := vaultKey(os.Getenv(pv.VaultKeyEnv))
		if err != nil {
			bad(p+".privacy.vault_key_env", err)
			return nil, err
		}
		disclosure := map[string]privacy.Grant{}
		for tool, types := range pv.Disclosures {
			if slices.Contains(types, "ALL") {
				disclosure[tool] = privacy.AllTypes()
				continue
			}
			ets := make([]privacy.EntityType, len(types))
			for i, t := range types {
				ets[i] = privacy.EntityType(t)
			}
			disclosure[tool] = privacy.Types(ets...)
		}
		g, err := privacy.NewGuard(&privacy.GuardOptions{Disclosure: disclosure, Output: outputModes[pv.Output], Vaults: store, Key: key, Scanner: pv.Detection.scanner(), RefuseFiles: pv.RefuseFiles})
		if err != nil {
			bad(p+".privacy", err)
			return nil, err
		}
		opts.Protect = g.Begin
		b.guard = g
	}
	return toolgate.NewClient(model, tools, opts), nil
}

// connectMCP connects to the agent's MCP servers and returns their tools
// and a confirmation policy for their confirm_tools (nil without servers).
func (b *agentBuild) connectMCP() ([]*toolgate.Tool, func(toolgate.ToolCall, toolgate.ToolMetadata) bool, error) {
	owner := map[string]string{} // tool name → whose it is
	for _, t := range builtinTools {
		owner[t] = "a built-in tool"
	}
	for _, h := range b.a.HTTPTools {
		owner[h.Name] = "an HTTP tool"
	}
	var tools []*toolgate.Tool
	var policies []func(toolgate.ToolCall, toolgate.ToolMetadata) bool
	var failed error
	for i, m := range b.a.MCPServers {
		sp := fmt.Sprintf("%s.mcp_servers[%d]", b.p, i)
		srv, err := mcptool.Connect(b.ctx, b.dialer(m), &mcptool.Options{
			Prefix:       m.Prefix,
			ConfirmTools: slices.Clone(m.ConfirmTools),
			Hints:        hintModes[m.Hints],
			MinBackoff:   m.MinBackoff,
			MaxBackoff:   m.MaxBackoff,
			Logger:       b.logger.With("agent", strings.TrimPrefix(b.p, "agents."), "mcp_server", m.Name),
		})
		if err != nil {
			err = fmt.Errorf("MCP server %q: %w", m.Name, err)
			b.bad(sp, err)
			failed = err
			continue
		}
		b.servers = append(b.servers, srv)
		policies = append(policies, srv.Policy())
		for _, is := range srv.Issues() {
			b.logger.Warn("serve: a tool of an MCP server is skipped", "agent", strings.TrimPrefix(b.p, "agents."), "mcp_server", m.Name, "tool", is.Name, "error", is.Err)
		}
		var clashes []string
		for _, t := range srv.Tools() {
			if o, ok := owner[t.Name()]; ok {
				clashes = append(clashes, fmt.Sprintf("%q (%s)", t.Name(), o))
				continue
			}
			owner[t.Name()] = fmt.Sprintf("a tool of MCP server %q", m.Name)
			tools = append(tools, t)
		}
		if len(clashes) > 3 {
			clashes = append(clashes[:3], fmt.Sprintf("and %d more", len(clashes)-3))
		}
		if len(clashes) > 0 {
			err := fmt.Errorf("MCP server %q has tools named as others: %s; give it another prefix", m.Name, strings.Join(clashes, ", "))
			b.bad(sp+".prefix", err)
			failed = err
		}
	}
	if failed != nil {
		return nil, nil, failed
	}
	if len(policies) == 0 {
		return tools, nil, nil
	}
	return tools, func(call toolgate.ToolCall, md toolgate.ToolMetadata) bool {
		for _, p := range policies {
			if p(call, md) {
				return true
			}
		}
		return false
	}, nil
}

// dialer returns the dialer of server m, whose entry was checked.
func (b *agentBuild) dialer(m MCPServerSpec) mcptool.Dialer {
	if m.Command != "" {
		command, _ := expandEnv(m.Command)
		args := make([]string, len(m.Args))
		for i, arg := range m.Args {
			args[i], _ = expandEnv(arg)
		}
		var env []string
		for _, k := range slices.Sorted(maps.Keys(m.Env)) {
			env = append(env, k+"="+m.Env[k])
		}
		return mcptool.Command(command, &mcptool.CommandOptions{Args: args, Env: env, Stderr: b.stderr})
	}
	header := http.Header{}
	for k, v := range m.Headers {
		header.Set(k, v)
	}
	var token string
	if m.BearerTokenEnv != "" {
		token = os.Getenv(m.BearerTokenEnv)
	}
	return mcptool.HTTP(m.URL, &mcptool.HTTPOptions{Header: header, BearerToken: token})
}

// checkToolNames checks the tool names of the agent's rules against its
// tools, MCP tools included. Without MCP servers, LoadConfig has checked
// them.
func (b *agentBuild) checkToolNames(tools []*toolgate.Tool) error {
	a, p := b.a, b.p
	if len(a.MCPServers) == 0 {
		return nil
	}
	var failed error
	check := func(path, name string) {
		if !slices.ContainsFunc(tools, func(t *toolgate.Tool) bool { return t.Name() == name }) {
			failed = fmt.Errorf("%q is not one of the agent's tools", name)
			b.bad(path, failed)
		}
	}
	for i, t := range a.Confirmation.Tools {
		check(fmt.Sprintf("%s.confirmation.tools[%d]", p, i), t)
	}
	for _, tool := range slices.Sorted(maps.Keys(a.Privacy.Disclosures)) {
		check(p+".privacy.disclosures."+tool, tool)
	}
	for i, r := range a.Approvals {
		for j, t := range r.Tools {
			check(fmt.Sprintf("%s.approvals[%d].tools[%d]", p, i, j), t)
		}
	}
	return failed
}

// OIDCSpec is authentication.oidc in a configuration file: the options of
// the bearer-token verifier [server.OIDC] and, with Login, the sign-in of
// the web pages through the same provider.
type OIDCSpec struct {
	server.OIDCOptions `yaml:",inline"`
	// Login lets browsers sign in through the provider (see
	// [server.OIDCLogin]); it shares Issuer, RolesClaim, ClockSkew and
	// Algorithms. With Login, Audience and JWKSURL may both be left out:
	// bearer tokens are then not accepted. nil: browsers sign in with API
	// keys only.
	Login *OIDCLoginSpec `yaml:"login"`
}

// bearer reports whether the spec configures the bearer-token verifier:
// always without Login, otherwise when it gives an audience or a JWKS URL.
func (o *OIDCSpec) bearer() bool {
	return o.Login == nil || o.Audience != "" || o.JWKSURL != ""
}

// OIDCLoginSpec is authentication.oidc.login in a configuration file.
type OIDCLoginSpec struct {
	// ClientID is [server.OIDCLogin.ClientID]. Required.
	ClientID string `yaml:"client_id"`
	// ClientSecretEnv names the environment variable holding
	// [server.OIDCLogin.ClientSecret]. "": a public client.
	ClientSecretEnv string `yaml:"client_secret_env"`
	// RedirectURL is [server.OIDCLogin.RedirectURL]. Required.
	RedirectURL string `yaml:"redirect_url"`
	// Scopes is [server.OIDCLogin.Scopes].
	Scopes []string `yaml:"scopes"`
	// ProviderName is [server.OIDCLogin.ProviderName].
	ProviderName string `yaml:"provider_name"`
}

// check adds the problems of the login spec at path p.
func (ls *OIDCLoginSpec) check(p, issuer string, bad func(path, format string, args ...any), env func(path, name string)) {
	if issuer != "" && !confcheck.HTTPURL(issuer) {
		bad(strings.TrimSuffix(p, ".login")+".issuer", "the login flow needs an http or https URL")
	}
	if ls.ClientID == "" {
		bad(p+".client_id", "required")
	}
	if ls.ClientSecretEnv != "" {
		env(p+".client_secret_env", ls.ClientSecretEnv)
	}
	if msg := confcheck.RedirectProblem(ls.RedirectURL); msg != "" {
		bad(p+".redirect_url", "%s", msg)
	}
	for i, sc := range ls.Scopes {
		if msg := confcheck.ScopeProblem(sc); msg != "" {
			bad(fmt.Sprintf("%s.scopes[%d]", p, i), "%s", msg)
		}
	}
}

// login returns the [server.OIDCLogin] of the spec, which has a Login.
func (o *OIDCSpec) login() *server.OIDCLogin {
	ls := o.Login
	l := &server.OIDCLogin{
		Issuer:       o.Issuer,
		ClientID:     ls.ClientID,
		RedirectURL:  ls.RedirectURL,
		Scopes:       slices.Clone(ls.Scopes),
		ProviderName: ls.ProviderName,
		RolesClaim:   o.RolesClaim,
		ClockSkew:    o.ClockSkew,
		Algorithms:   slices.Clone(o.Algorithms),
	}
	if ls.ClientSecretEnv != "" {
		l.ClientSecret = os.Getenv(ls.ClientSecretEnv)
	}
	return l
}
