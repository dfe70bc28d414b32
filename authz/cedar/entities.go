package cedar

import (
	"hash/maphash"
	"maps"
	"slices"
	"sync"

	"github.com/cedar-policy/cedar-go/types"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/authz"
)

// Entity types of the mapping.
const (
	typeUser   types.EntityType = "User"
	typeRole   types.EntityType = "Role"
	typeAction types.EntityType = "Action"
	typeTool   types.EntityType = "Tool"
)

// principalEntities is the entity store of one principal: its User entity,
// whose parents are its roles. Role entities themselves need not exist for
// `principal in Role::"x"` to hold. It also remembers the principal's
// definition-phase decisions: they depend only on the entity, the tool's
// name and metadata, and the policy set. It is safe for concurrent use.
type principalEntities struct {
	// fixed at creation: the principal it was built from, to tell apart
	// hash collisions, and its entity
	id     string
	roles  []string
	attrs  map[string]string
	uid    types.EntityUID
	entity types.Entity

	mu   sync.Mutex
	memo *memo // guarded by mu; nil: none yet
}

// memo holds definition-phase decisions made with one policy set.
type memo struct {
	set       *policySet
	decisions map[memoKey]authz.Decision
}

type memoKey struct {
	tool string
	meta toolgate.ToolMetadata
}

// maxMemo bounds the decisions remembered per principal.
const maxMemo = 4096

// remembered returns the definition-phase decision for a tool made with
// set, if there is one.
func (p *principalEntities) remembered(set *policySet, tool string, meta toolgate.ToolMetadata) (authz.Decision, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.memo == nil || p.memo.set != set {
		return authz.Decision{}, false
	}
	d, ok := p.memo.decisions[memoKey{tool, meta}]
	return d, ok
}

// remember records a definition-phase decision made with set.
func (p *principalEntities) remember(set *policySet, tool string, meta toolgate.ToolMetadata, d authz.Decision) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.memo == nil || p.memo.set != set || len(p.memo.decisions) >= maxMemo {
		p.memo = &memo{set: set, decisions: make(map[memoKey]authz.Decision)}
	}
	p.memo.decisions[memoKey{tool, meta}] = d
}

// Get implements [types.EntityGetter].
func (p *principalEntities) Get(uid types.EntityUID) (types.Entity, bool) {
	if uid == p.uid {
		return p.entity, true
	}
	return types.Entity{}, false
}

func newPrincipalEntities(pr *toolgate.Principal) *principalEntities {
	uid := types.NewEntityUID(typeUser, types.String(pr.ID))
	parents := make([]types.EntityUID, len(pr.Roles))
	for i, r := range pr.Roles {
		parents[i] = types.NewEntityUID(typeRole, types.String(r))
	}
	attrs := make(types.RecordMap, len(pr.Attributes))
	for k, v := range pr.Attributes {
		attrs[types.String(k)] = types.String(v)
	}
	return &principalEntities{
		id: pr.ID, roles: slices.Clone(pr.Roles), attrs: maps.Clone(pr.Attributes),
		uid: uid,
		entity: types.Entity{
			UID:        uid,
			Parents:    types.NewEntityUIDSet(parents...),
			Attributes: types.NewRecord(attrs),
		},
	}
}

func (p *principalEntities) is(pr *toolgate.Principal) bool {
	return p.id == pr.ID && slices.Equal(p.roles, pr.Roles) && maps.Equal(p.attrs, pr.Attributes)
}

// entityCache maps principals (id, roles, attributes) to their entities.
// It holds at most max entries; when full, an arbitrary entry makes room.
// It is safe for concurrent use.
type entityCache struct {
	seed maphash.Seed // fixed at creation
	max  int          // fixed at creation; <= 0: no caching

	mu sync.RWMutex
	m  map[uint64]*principalEntities // guarded by mu
}

func newEntityCache(max int) *entityCache {
	return &entityCache{seed: maphash.MakeSeed(), max: max, m: make(map[uint64]*principalEntities)}
}

// hash hashes the principal's id, roles (in order) and attributes (in any
// order) without allocating.
func (c *entityCache) hash(pr *toolgate.Principal) uint64 {
	var h maphash.Hash
	h.SetSeed(c.seed)
	h.WriteString(pr.ID)
	h.WriteByte(0)
	for _, r := range pr.Roles {
		h.WriteString(r)
		h.WriteByte(0)
	}
	sum := h.Sum64()
	var attrs uint64
	for k, v := range pr.Attributes {
		h.Reset()
		h.WriteString(k)
		h.WriteByte(0)
		h.WriteString(v)
		attrs += h.Sum64()
	}
	return sum ^ (attrs * 0x9e3779b97f4a7c15) ^ uint64(len(pr.Attributes))
}

// get returns the entities of pr, building and caching them if needed.
func (c *entityCache) get(pr *toolgate.Principal) *principalEntities {
	if c.max <= 0 {
		return newPrincipalEntities(pr)
	}
	key := c.hash(pr)
	c.mu.RLock()
	e := c.m[key]
	c.mu.RUnlock()
	if e != nil && e.is(pr) {
		return e
	}
	e = newPrincipalEntities(pr)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[key]; !ok && len(c.m) >= c.max {
		for k := range c.m {
			delete(c.m, k)
			break
		}
	}
	c.m[key] = e
	return e
}

// len returns the number of cached principals.
func (c *entityCache) len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.m)
}
