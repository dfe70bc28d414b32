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
	// ReadAllRoles are the roles whose holders see every conversation
	// (list and get), not only their own. nil: everybody sees only their
	// own.
	ReadAllRoles []string `json:"read_all_roles,omitempty" yaml:"read_all_roles,omitempty"`
	// MaxBodyBytes limits the size of a request body; a larger one is
	// answered with 413. 0: [DefaultMaxBodyBytes].
	MaxBodyBytes int64 `json:"max_body_bytes,omitempty" yaml:"max_body_bytes,omitempty"`
	// PauseTTL is how long a pause waits for a decision: an older pause
	// is expired, its calls answer the model "expired, not executed" and
	// a later decision gets 409 "expired". [Agent.PauseTTL] overrides it.
	// 0: pauses never expire. It must not be negative.
	PauseTTL time.Duration `json:"pause_ttl,omitempty" yaml:"pause_ttl,omitempty"`
	// SessionTTL is how long a browser stays signed in to the web pages
	// after signing in with an API key. Sessions are kept in memory: they
	// end when the process exits, and one instance does not know another's.
	// 0: [DefaultSessionTTL]. It must not be negative.
	SessionTTL time.Duration `json:"session_ttl,omitempty" yaml:"session_ttl,omitempty"`
	// Logger receives the server's errors. nil: [slog.Default].
	Logger *slog.Logger `json:"-" yaml:"-"`
}

// DefaultMaxBodyBytes is the body size limit when [Config.MaxBodyBytes] is 0.
const DefaultMaxBodyBytes = 1 << 20

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

// validate checks the configuration and returns the API keys by hash.
func (c *Config) validate() (map[[sha256.Size]byte]*toolgate.Principal, error) {
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
	if c.SessionTTL < 0 {
		errs = append(errs, fmt.Errorf("session_ttl %v is negative", c.SessionTTL))
	}
	keys := make(map[[sha256.Size]byte]*toolgate.Principal, len(c.APIKeys))
	for i, k := range c.APIKeys {
		b, err := hex.DecodeString(k.SHA256)
		if err != nil || len(b) != sha256.Size {
			errs = append(errs, fmt.Errorf("api_keys[%d]: sha256 is not a hex-encoded SHA-256 hash", i))
			continue
		}
		if k.Principal.ID == "" {
			errs = append(errs, fmt.Errorf("api_keys[%d]: empty principal id", i))
			continue
		}
		h := [sha256.Size]byte(b)
		if keys[h] != nil {
			errs = append(errs, fmt.Errorf("api_keys[%d]: the same key as another entry", i))
			continue
		}
		p := k.Principal
		p.Roles = slices.Clone(p.Roles)
		p.Attributes = maps.Clone(p.Attributes)
		keys[h] = &p
	}
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
		ac.Approvals = make([]ApprovalRule, len(a.Approvals))
		for i, r := range a.Approvals {
			ac.Approvals[i] = ApprovalRule{Tools: slices.Clone(r.Tools), Roles: slices.Clone(r.Roles), RequesterMayDecide: r.RequesterMayDecide}
		}
		out.Agents[name] = &ac
	}
	out.APIKeys = slices.Clone(c.APIKeys)
	out.ReadAllRoles = slices.Clone(c.ReadAllRoles)
	if out.MaxBodyBytes <= 0 {
		out.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if out.Logger == nil {
		out.Logger = slog.Default()
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
