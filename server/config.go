package server

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/audit"
	"github.com/toolgate/toolgate/internal/confcheck"
	"github.com/toolgate/toolgate/privacy"
	"github.com/toolgate/toolgate/records"
	"github.com/toolgate/toolgate/telemetry"
	"github.com/toolgate/toolgate/webhook"
)

// Config configures a [Server]. It is copied by [New]; the agents' clients
// are shared, not copied.
//
// The field names and tags are those of the configuration file to come: a
// YAML file maps onto this struct, except for the values only Go can give
// (clients, logger), which the file will describe by a spec instead.
type Config struct {
	// Agents are the agents conversations run on, by name. A name is
	// chosen when a conversation is created. At least one is required.
	Agents map[string]*Agent `json:"agents" yaml:"agents"`
	// APIKeys authenticate callers: a request carrying
	// "Authorization: Bearer KEY" runs as the principal of the entry whose
	// SHA256 is the hash of KEY. nil: nobody can authenticate (every
	// endpoint but /healthz answers 401).
	APIKeys []APIKey `json:"api_keys" yaml:"api_keys"`
	// Tokens authenticates the bearer tokens that are not API keys and
	// have the shape of a JWT, such as an [*OIDC] verifier. nil: only API
	// keys authenticate.
	Tokens TokenVerifier `json:"-" yaml:"-"`
	// OIDCLogin lets browsers sign in to the web pages through an OpenID
	// Connect provider (see oidclogin.go), besides with an API key. nil:
	// API keys only.
	OIDCLogin *OIDCLogin `json:"-" yaml:"-"`
	// ReadAllRoles are the roles whose holders see every conversation
	// (list and get), not only their own. nil: everybody sees only their
	// own.
	ReadAllRoles []string `json:"read_all_roles,omitempty" yaml:"read_all_roles,omitempty"`
	// MaxBodyBytes limits the size of a request body; a larger one is
	// answered with 413. 0: [DefaultMaxBodyBytes].
	MaxBodyBytes int64 `json:"max_body_bytes,omitempty" yaml:"max_body_bytes,omitempty"`
	// MaxFileBytes limits the size of each file of a posted message (its
	// bytes, once decoded from base64); a larger one is answered with 413
	// "file_too_large". 0: [DefaultMaxFileBytes].
	MaxFileBytes int64 `json:"max_file_bytes,omitempty" yaml:"max_file_bytes,omitempty"`
	// MaxMessageFileBytes limits the bytes of all the files of one posted
	// message; more is answered with 413 "message_too_large". The body
	// limit of a message post is MaxBodyBytes plus the base64 size of
	// MaxMessageFileBytes. 0: [DefaultMaxMessageFileBytes].
	MaxMessageFileBytes int64 `json:"max_message_file_bytes,omitempty" yaml:"max_message_file_bytes,omitempty"`
	// PauseTTL is how long a pause waits for a decision: an older pause
	// is expired, its calls answer the model "expired, not executed" and
	// a later decision gets 409 "expired". [Agent.PauseTTL] overrides it.
	// 0: pauses never expire. It must not be negative.
	PauseTTL time.Duration `json:"pause_ttl,omitempty" yaml:"pause_ttl,omitempty"`
	// SessionTTL is how long a browser stays signed in to the web pages
	// after signing in (with an API key or through OIDCLogin). Sessions
	// are kept in [Config.Records]: with a SQLite or PostgreSQL store they
	// survive restarts, and every instance on the database knows them.
	// 0: [DefaultSessionTTL]. It must not be negative.
	SessionTTL time.Duration `json:"session_ttl,omitempty" yaml:"session_ttl,omitempty"`
	// IdempotencyTTL is how long the response to a request sent with an
	// Idempotency-Key header is kept for retries with the same key (see
	// idempotency.go); after that the key may name a new request. 0:
	// [DefaultIdempotencyTTL]. It must not be negative.
	IdempotencyTTL time.Duration `json:"idempotency_ttl,omitempty" yaml:"idempotency_ttl,omitempty"`
	// ClaimLease is how long a decided pause may stay claimed by a
	// resumption that has not stored its results before the server
	// recovers it with [toolgate.Client.RecoverPause] (see recovery.go):
	// it must exceed the longest time the tools of one resumption take.
	// The same lease applies to a decision recorded but never claimed, or
	// whose outcome was never recorded (see recovery.go). 0:
	// [DefaultClaimLease]; negative: claimed pauses are never recovered.
	ClaimLease time.Duration `json:"claim_lease,omitempty" yaml:"claim_lease,omitempty"`
	// Audit receives the service's audit records (see server/audit.go and
	// docs/API.md): a call paused, decided, ran, denied, expired, refused,
	// revealed. The server shares it and does not close it. nil: no audit
	// log (and no reveals, see [Agent.RevealRoles]).
	Audit audit.Log `json:"-" yaml:"-"`
	// AuditDigestKey, when set, keys the argument digests of audit records
	// ([audit.KeyedDigest]), so that a digest confirms no guess of the
	// arguments. nil: [audit.Digest].
	AuditDigestKey []byte `json:"-" yaml:"-"`
	// AuditRoles are the roles whose holders may read the audit records of
	// every conversation; a conversation's readers may read its own. nil:
	// readers only.
	AuditRoles []string `json:"audit_roles,omitempty" yaml:"audit_roles,omitempty"`
	// Records keeps the server's own records: conversations' owners,
	// decision records, the index of open pauses, first approvals and
	// sticky grants. Servers sharing the agents' store should share it
	// too: the SQL stores provide one on their database
	// ((*sqlite.Store).Records, (*postgres.Store).Records), which [Build]
	// uses. With one of those, and Audit nil or the store's own log, the
	// server writes its records and audit records in the transactions of
	// the store's own writes (one transaction per step of a decision), for
	// the agents whose client's store is that store or wraps it (a store
	// with a method Unwrap() toolgate.ConversationStore that passes every
	// call on with its context); a wrapper of the record store may take
	// part the same way (see [records.WithHook]). nil: a [records.Memory],
	// lost when the process exits.
	Records records.Store `json:"-" yaml:"-"`
	// Broker carries the events of the event streams between the server
	// instances that share the agents' stores, such as the postgres
	// package's Broker on the stores' database. The server subscribes in
	// [New] and unsubscribes in [Server.Close]; the caller owns the broker
	// and closes it after the server. nil: a [LocalBroker] of the
	// server's own, so that its streams see only its own events.
	Broker Broker `json:"-" yaml:"-"`
	// Logger receives the server's errors and one line per request (see
	// docs/API.md, "Operations"). nil: [slog.Default].
	Logger *slog.Logger `json:"-" yaml:"-"`
	// Telemetry records the server's metrics and spans; give the same one
	// to the agents' clients ([telemetry.Telemetry.ModelMiddleware] and
	// ToolMiddleware) to record their model calls and tool runs too, as
	// [Build] does. nil: a new one with a registry of its own and the
	// global OpenTelemetry tracer provider.
	Telemetry *telemetry.Telemetry `json:"-" yaml:"-"`
	// RequestTimeout bounds the handling of every request but turns
	// (posting a message, deciding a pause) and event streams: past it the
	// request's context is canceled and, unless the answer was already
	// written, it is answered 504 "timeout". 0: [DefaultRequestTimeout].
	// It must not be negative.
	RequestTimeout time.Duration `json:"request_timeout,omitempty" yaml:"request_timeout,omitempty"`
	// TurnTimeout bounds the requests that run a turn: posting a message
	// and deciding a pause. 0: [DefaultTurnTimeout]. It must not be
	// negative.
	TurnTimeout time.Duration `json:"turn_timeout,omitempty" yaml:"turn_timeout,omitempty"`
	// DisableMetrics removes the GET /metrics endpoint; the metrics are
	// still recorded in the Telemetry's registry, for the caller to serve
	// elsewhere. false: /metrics is served.
	DisableMetrics bool `json:"disable_metrics,omitempty" yaml:"disable_metrics,omitempty"`
	// MetricsRoles protect GET /metrics: a scrape must then authenticate
	// like any API call, as a principal holding one of the roles. nil:
	// /metrics needs no authentication, as Prometheus expects by default.
	MetricsRoles []string `json:"metrics_roles,omitempty" yaml:"metrics_roles,omitempty"`
	// Identities maps principal ids to the person they are, for the
	// checks that compare people: the two-person rule's distinct
	// approvers and the requester who may not decide their own calls. Map
	// the id of a person's API key principal and the subject of their OIDC
	// tokens to one name so that they count once. nil: every id is its
	// own person.
	Identities map[string]string `json:"identities,omitempty" yaml:"identities,omitempty"`
	// CaseInsensitiveIDs compares the ids of those checks without regard
	// to case (after Identities), for identity providers whose ids are
	// case-insensitive: "Bob" and "bob" are then one person. false: ids
	// compare byte for byte.
	CaseInsensitiveIDs bool `json:"case_insensitive_ids,omitempty" yaml:"case_insensitive_ids,omitempty"`
	// IdentitySources set, per identity source, how the principal ids it
	// authenticates become the identities the server compares and
	// records: the key [APIKeysSource] for the API keys, and an issuer
	// (the "iss" attribute of the principals a [TokenVerifier] returns,
	// as an [*OIDC] verifier and an [OIDCLogin] sign-in set it) for the
	// principals of its tokens and sign-ins. A source not named here
	// keeps its ids as they are. nil: none.
	IdentitySources map[string]IdentitySource `json:"identity_sources,omitempty" yaml:"identity_sources,omitempty"`
	// MaxDenyMessage bounds the length of a deny message, in characters
	// (Unicode code points); a longer one is refused with 422
	// "message_too_long". 0: [DefaultMaxDenyMessage].
	MaxDenyMessage int `json:"max_deny_message,omitempty" yaml:"max_deny_message,omitempty"`
	// MaxEditedArguments bounds the size of one call's edited arguments,
	// in bytes; larger ones are refused with 422 "arguments_too_large".
	// 0: [DefaultMaxEditedArguments].
	MaxEditedArguments int `json:"max_edited_arguments,omitempty" yaml:"max_edited_arguments,omitempty"`
	// Webhooks sends a webhook when this server pauses, decides or
	// expires a pause (see webhooks.go and docs/SERVICE.md). The server
	// shares it and does not close it. nil: no webhooks.
	Webhooks *webhook.Sender `json:"-" yaml:"-"`
	// WebhookRoles are the roles whose holders may read the webhooks'
	// delivery log (GET /v1/webhooks/deliveries). nil: nobody.
	WebhookRoles []string `json:"webhook_roles,omitempty" yaml:"webhook_roles,omitempty"`
	// PublicURL is the service's address as people reach it, such as
	// "https://toolgate.example.com": webhooks link to a pause's page under
	// it. "": webhooks carry no link.
	PublicURL string `json:"public_url,omitempty" yaml:"public_url,omitempty"`
}

// The bounds of a decision when [Config.MaxDenyMessage] and
// [Config.MaxEditedArguments] are 0.
const (
	DefaultMaxDenyMessage     = 2000
	DefaultMaxEditedArguments = 16 << 10
)

// The timeouts when [Config.RequestTimeout] and [Config.TurnTimeout] are 0.
const (
	DefaultRequestTimeout = 30 * time.Second
	DefaultTurnTimeout    = 2 * time.Minute
)

// DefaultMaxBodyBytes is the body size limit when [Config.MaxBodyBytes] is 0.
const DefaultMaxBodyBytes = 1 << 20

// DefaultMaxFileBytes is the size limit of a file of a posted message when
// [Config.MaxFileBytes] is 0: 5 MiB.
const DefaultMaxFileBytes = 5 << 20

// DefaultMaxMessageFileBytes is the limit of all the files of a posted
// message when [Config.MaxMessageFileBytes] is 0: 10 MiB.
const DefaultMaxMessageFileBytes = 10 << 20

// Agent is one agent the server runs.
type Agent struct {
	// Client runs the agent's turns and keeps its conversations in its
	// store. Required. The client's store is where paused replies are read
	// from; the server never takes one from a request.
	Client *toolgate.Client `json:"-" yaml:"-"`
	// RequesterRoles are the roles that may create conversations with the
	// agent and post messages to them. nil: every authenticated principal.
	RequesterRoles []string `json:"requester_roles,omitempty" yaml:"requester_roles,omitempty"`
	// Approvals say who may decide the agent's paused calls. A pause is
	// decided as a whole, so a principal may decide it only when, for every
	// call that awaits a decision, some rule naming the call's tool (or
	// naming no tool) allows it. nil: nobody may decide; paused turns wait.
	Approvals []ApprovalRule `json:"approvals,omitempty" yaml:"approvals,omitempty"`
	// PauseTTL is how long the agent's pauses wait for a decision,
	// overriding [Config.PauseTTL]. 0: Config.PauseTTL; negative: the
	// agent's pauses never expire.
	PauseTTL time.Duration `json:"pause_ttl,omitempty" yaml:"pause_ttl,omitempty"`
	// Privacy is the privacy guard the agent's client protects its turns
	// with (its [toolgate.ClientOptions.Protect]), which the server uses
	// to show the agent's conversations and pauses with tokens instead of
	// personal data. nil: shown as stored.
	Privacy *privacy.Guard `json:"-" yaml:"-"`
	// RevealRoles are the roles whose holders may ask to see the originals
	// behind the tokens (?reveal=true); each reveal is audited. They need
	// Privacy and [Config.Audit]. nil: nobody may.
	RevealRoles []string `json:"reveal_roles,omitempty" yaml:"reveal_roles,omitempty"`
	// ShowReasoning shows the model's readable reasoning in the agent's
	// conversation views and pause contexts (through Privacy, like the
	// rest). Signatures, encrypted and redacted reasoning and other
	// provider data are never shown. false: reasoning is left out of what
	// the server shows.
	ShowReasoning bool `json:"show_reasoning,omitempty" yaml:"show_reasoning,omitempty"`
}

// ApprovalRule says who may decide the calls of some tools.
type ApprovalRule struct {
	// Tools are the tool names the rule covers, as the model sees them.
	// nil: every tool of the agent.
	Tools []string `json:"tools,omitempty" yaml:"tools,omitempty"`
	// Roles are the roles whose holders may decide. nil: nobody (a rule
	// without roles allows only the requester, and only with
	// RequesterMayDecide).
	Roles []string `json:"roles,omitempty" yaml:"roles,omitempty"`
	// RequesterMayDecide lets the principal who owns the conversation
	// decide its own calls (holding one of Roles is then not needed).
	// false: the requester may not decide, whatever their roles.
	RequesterMayDecide bool `json:"requester_may_decide,omitempty" yaml:"requester_may_decide,omitempty"`
	// Approvers is how many distinct principals must allow a call of the
	// rule's tools: 2 is the two-person rule (the first approval is
	// recorded and answered 202; a second principal who may decide must
	// send the same decisions). A denial needs one person. When several
	// rules cover a tool, the largest Approvers applies. 0 or 1: one
	// approver. More than 2 is refused.
	Approvers int `json:"approvers,omitempty" yaml:"approvers,omitempty"`
	// StickyMax lets a principal the rule allows to decide also grant a
	// sticky approval of up to this long: later calls of the same tool in
	// the same conversation are allowed without asking until it ends.
	// Not with Approvers 2 (one person's grant would stand in for two).
	// 0: no sticky approvals. It must not be negative.
	StickyMax time.Duration `json:"sticky_max,omitempty" yaml:"sticky_max,omitempty"`
}

// problems returns what is wrong with the rule's settings.
func (r *ApprovalRule) problems() []confcheck.FieldProblem {
	return confcheck.ApprovalRule(r.Approvers, r.StickyMax)
}

// covers reports whether the rule applies to calls of tool.
func (r *ApprovalRule) covers(tool string) bool {
	return r.Tools == nil || slices.Contains(r.Tools, tool)
}

// APIKey maps the hash of an API key to the principal it authenticates.
// Keys themselves are never stored: only their SHA-256 hashes.
type APIKey struct {
	// SHA256 is the hex-encoded SHA-256 hash of the key, as [HashAPIKey]
	// returns it.
	SHA256 string `json:"sha256" yaml:"sha256"`
	// Principal is who a request with the key runs as. Its ID must not be
	// empty.
	Principal toolgate.Principal `json:"principal" yaml:"principal"`
}

// HashAPIKey returns the hex-encoded SHA-256 hash of key, the form
// [APIKey.SHA256] holds.
func HashAPIKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// validate checks the configuration and returns the API key table.
func (c *Config) validate() (*keyTable, error) {
	var errs []error
	if len(c.Agents) == 0 {
		errs = append(errs, errors.New("no agents"))
	}
	for _, name := range slices.Sorted(maps.Keys(c.Agents)) {
		a := c.Agents[name]
		switch {
		case name == "":
			errs = append(errs, errors.New("an agent has an empty name"))
		case a == nil || a.Client == nil:
			errs = append(errs, fmt.Errorf("agent %q: no client", name))
		}
	}
	errs = append(errs, c.expiryProblems()...)
	errs = append(errs, c.auditProblems()...)
	for _, name := range slices.Sorted(maps.Keys(c.Agents)) {
		if a := c.Agents[name]; a != nil {
			for i, r := range a.Approvals {
				for _, p := range r.problems() {
					errs = append(errs, fmt.Errorf("agent %q: approvals[%d]: %s", name, i, p.Msg))
				}
			}
		}
	}
	errs = append(errs, c.opsProblems()...)
	errs = append(errs, c.OIDCLogin.problems()...)
	if c.MaxDenyMessage < 0 {
		errs = append(errs, fmt.Errorf("max_deny_message %d is negative", c.MaxDenyMessage))
	}
	if c.MaxEditedArguments < 0 {
		errs = append(errs, fmt.Errorf("max_edited_arguments %d is negative", c.MaxEditedArguments))
	}
	if msg := publicURLProblem(c.PublicURL); msg != "" {
		errs = append(errs, errors.New(msg))
	}
	if c.SessionTTL < 0 {
		errs = append(errs, fmt.Errorf("session_ttl %v is negative", c.SessionTTL))
	}
	if c.IdempotencyTTL < 0 {
		errs = append(errs, fmt.Errorf("idempotency_ttl %v is negative", c.IdempotencyTTL))
	}
	keys, kerrs := newKeyTable(c.APIKeys, c.IdentitySources[APIKeysSource])
	errs = append(errs, kerrs...)
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("server: invalid config: %w", err)
	}
	return keys, nil
}

// clone returns a deep copy of c, sharing the clients and the logger.
func (c *Config) clone() *Config {
	out := *c
	out.Agents = make(map[string]*Agent, len(c.Agents))
	for name, a := range c.Agents {
		ac := *a
		ac.RequesterRoles = slices.Clone(a.RequesterRoles)
		ac.RevealRoles = slices.Clone(a.RevealRoles)
		ac.Approvals = make([]ApprovalRule, len(a.Approvals))
		for i, r := range a.Approvals {
			ac.Approvals[i] = r
			ac.Approvals[i].Tools = slices.Clone(r.Tools)
			ac.Approvals[i].Roles = slices.Clone(r.Roles)
		}
		out.Agents[name] = &ac
	}
	out.APIKeys = slices.Clone(c.APIKeys)
	out.ReadAllRoles = slices.Clone(c.ReadAllRoles)
	out.AuditRoles = slices.Clone(c.AuditRoles)
	out.AuditDigestKey = slices.Clone(c.AuditDigestKey)
	out.MetricsRoles = slices.Clone(c.MetricsRoles)
	out.WebhookRoles = slices.Clone(c.WebhookRoles)
	out.OIDCLogin = c.OIDCLogin.clone()
	out.Identities = maps.Clone(c.Identities)
	out.IdentitySources = maps.Clone(c.IdentitySources)
	if out.MaxDenyMessage == 0 {
		out.MaxDenyMessage = DefaultMaxDenyMessage
	}
	if out.MaxEditedArguments == 0 {
		out.MaxEditedArguments = DefaultMaxEditedArguments
	}
	if out.MaxBodyBytes <= 0 {
		out.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if out.MaxFileBytes <= 0 {
		out.MaxFileBytes = DefaultMaxFileBytes
	}
	if out.MaxMessageFileBytes <= 0 {
		out.MaxMessageFileBytes = DefaultMaxMessageFileBytes
	}
	if out.Logger == nil {
		out.Logger = slog.Default()
	}
	if out.Records == nil {
		out.Records = records.NewMemory()
	}
	return &out
}

// hasRole reports whether p holds one of roles.
func hasRole(p *toolgate.Principal, roles []string) bool {
	for _, r := range p.Roles {
		if slices.Contains(roles, r) {
			return true
		}
	}
	return false
}
