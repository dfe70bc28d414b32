package toolgate

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"runtime/debug"
	"unsafe"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/toolgate/toolgate/internal/argcheck"
)

// ToolDefinition is what a model sees of a tool.
//
// JSON: {"name":"...","description":"...","input_schema":{...}}.
type ToolDefinition struct {
	// Name is the name the model calls the tool by. It must match
	// [ValidToolName].
	Name string `json:"name"`
	// Description tells the model what the tool does.
	Description string `json:"description,omitempty"`
	// InputSchema is the JSON schema of the arguments; nil means any object.
	InputSchema *jsonschema.Schema `json:"input_schema,omitempty"`
}

// ToolMetadata is what toolgate knows about a tool beyond its definition.
// The zero value means: the result goes back to the model, and no
// confirmation is needed.
//
// JSON: {"return_direct":true,"requires_confirmation":true}; false fields
// are omitted.
type ToolMetadata struct {
	// ReturnDirect: the tool's result is the answer of the turn and is not
	// sent back to the model when every call of the reply ran and every
	// called tool returns directly ([FinishReturnDirect]).
	ReturnDirect bool `json:"return_direct,omitempty"`
	// RequiresConfirmation: a call needs a person's decision before it runs
	// (honoured by default; see [ClientOptions.DisableMetadataFlag]).
	RequiresConfirmation bool `json:"requires_confirmation,omitempty"`
}

// Principal is the identity a call is made for: the end user, a service
// account, an approver. It is passed explicitly with each call of the
// [Client] and reaches tools in [ToolRequest.Principal]; nothing looks it up
// from ambient state.
//
// JSON: {"id":"...","roles":[...],"attributes":{...}}.
type Principal struct {
	ID         string            `json:"id"`
	Roles      []string          `json:"roles,omitempty"`
	Attributes map[string]string `json:"attributes,omitempty"`
}

// ToolRequest is what a tool receives besides its context: the call, the
// key that decisions used for it, the conversation and the principal. A
// tool may use the conversation id and the key (or the call id) as an
// idempotency key.
//
// The request is owned by the client; a tool must not keep it after it
// returns.
type ToolRequest struct {
	// Call is the call as the model made it, except that its Arguments are
	// a person's edit when the call was allowed with
	// [AllowWithArguments].
	Call ToolCall
	// Key is the call's key in its reply (see [AssistantMessage.CallKeys]).
	Key string
	// ConversationID is "" outside a conversation.
	ConversationID string
	// Principal is nil when the caller gave none.
	Principal *Principal
	// Arguments is the call's arguments as JSON: "{}" when the model sent
	// none, and always syntactically valid JSON.
	Arguments json.RawMessage
	// IdempotencyKey identifies the call of a decided pause across retries
	// and recoveries: [IdempotencyKey] of the conversation, the pause and
	// the call's key. A tool with external effects can pass it on (as an
	// Idempotency-Key header, say) so that the service it calls applies the
	// effect once. "" for calls that did not pause.
	IdempotencyKey string

	files   Parts // attached by the tool, see AttachFile
	maxFile int   // the client's MaxFileSize; 0: its default; negative: no limit
}

// AttachFile adds a file (an image, a PDF) to the call's result: when the
// call succeeds, its [ToolResult] holds the files in Parts, after the
// content, for the providers whose APIs take files in tool results. A file
// that is not a valid [FilePart] is an error wrapping [ErrInvalidMessage],
// one larger than the client's [ClientOptions.MaxFileSize] a
// [*FileTooLargeError]; the file is not attached either way. Files of a
// call that fails are dropped with its content.
func (r *ToolRequest) AttachFile(f FilePart) error {
	if err := checkPart(f); err != nil {
		return fmt.Errorf("%w: tool %q: %v", ErrInvalidMessage, r.Call.Name, err)
	}
	limit := r.maxFile
	if limit == 0 {
		limit = defaultMaxFileSize // a request made outside a client
	}
	if limit > 0 && len(f.Data) > limit {
		return &FileTooLargeError{Part: len(r.files), Size: len(f.Data), Limit: limit}
	}
	r.files = append(r.files, cloneParts(Parts{f})...)
	return nil
}

// ToolFunc runs a tool call and returns the content the model reads. It is
// the raw tier of tools (JSON in, text out, no schema validation) and the
// type that tool middleware wraps: func(next ToolFunc) ToolFunc.
//
// A returned error becomes an error result for the model (see
// [ClientOptions.ErrorHandler]); it does not end the turn.
type ToolFunc func(ctx context.Context, req *ToolRequest) (string, error)

// Tool is a tool the model can call: its definition, its metadata and the
// function that runs it. Build one with [NewTool] (raw tier) or [NewToolFor]
// (typed tier). A Tool is immutable and safe for concurrent use.
type Tool struct {
	def     ToolDefinition
	meta    ToolMetadata
	run     ToolFunc            // nil for a tool decoded from JSON
	check   *argcheck.Validator // typed tier: the compiled input schema
	wrapped bool                // run is middleware around the tool's own function
}

// ValidToolName reports whether name can name a tool: 1 to 64 characters,
// each an ASCII letter, digit, '_', '-' or '.'. This is the intersection of
// what the major providers accept.
func ValidToolName(name string) bool {
	if len(name) == 0 || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// NewTool returns a raw-tier tool: fn receives the arguments as JSON (checked
// only to be well-formed JSON) and returns the text the model reads. The
// definition's schema is shown to the model but not enforced.
//
// NewTool panics if the name is not valid (see [ValidToolName]) or fn is
// nil: these are programming errors. Check [ValidToolName] first for
// names that come from outside the program.
func NewTool(def ToolDefinition, meta ToolMetadata, fn ToolFunc) *Tool {
	if err := checkToolDefinition(def); err != nil {
		panic(err)
	}
	if fn == nil {
		panic(fmt.Sprintf("toolgate: NewTool(%q): nil function", def.Name))
	}
	return &Tool{def: def, meta: meta, run: fn}
}

// checkToolDefinition reports whether def can be used for a tool: its name
// must be valid (see [ValidToolName]).
func checkToolDefinition(def ToolDefinition) error {
	if !ValidToolName(def.Name) {
		return fmt.Errorf("toolgate: invalid tool name %q: want 1-64 of [A-Za-z0-9_.-]", def.Name)
	}
	return nil
}

// ToolOptions configure a typed tool built by [NewToolFor]. A nil
// *ToolOptions means all defaults.
type ToolOptions struct {
	// InputSchema replaces the schema inferred from the input type. nil:
	// inferred with [jsonschema.For], field descriptions taken from the
	// `jsonschema:"..."` struct tags.
	InputSchema *jsonschema.Schema
	// Metadata is the tool's metadata; zero: no confirmation, not
	// return-direct.
	Metadata ToolMetadata
}

// NewToolFor returns a typed-tier tool that runs fn. The input schema is
// inferred from In (unless opts gives one); before fn runs, the arguments
// are validated against it and decoded into In, and invalid arguments
// become an error result for the model without fn running. fn's output is
// encoded as JSON for the model.
//
// NewToolFor panics if the name is invalid, fn is nil, or the schema cannot
// be inferred or resolved: these are programming errors.
func NewToolFor[In, Out any](name, description string, fn func(ctx context.Context, req *ToolRequest, in In) (Out, error), opts *ToolOptions) *Tool {
	if opts == nil {
		opts = &ToolOptions{}
	}
	if fn == nil {
		panic(fmt.Sprintf("toolgate: NewToolFor(%q): nil function", name))
	}
	schema := opts.InputSchema
	if schema == nil {
		var err error
		schema, err = jsonschema.For[In](nil)
		if err != nil {
			panic(fmt.Sprintf("toolgate: NewToolFor(%q): %v", name, err))
		}
	}
	def := ToolDefinition{Name: name, Description: description, InputSchema: schema}
	if err := checkToolDefinition(def); err != nil {
		panic(err)
	}
	resolved, err := schema.Resolve(nil)
	if err != nil {
		panic(fmt.Sprintf("toolgate: NewToolFor(%q): schema: %v", name, err))
	}
	check := argcheck.Compile(schema, resolved)
	t := &Tool{def: def, meta: opts.Metadata, check: check}
	decode := decoder[In](check)
	t.run = func(ctx context.Context, req *ToolRequest) (string, error) {
		in, err := decode(req)
		if err != nil {
			return "", fmt.Errorf("%w: %v", ErrInvalidArguments, err)
		}
		out, err := fn(ctx, req, in)
		if err != nil {
			return "", err
		}
		b, err := json.Marshal(out)
		if err != nil {
			return "", fmt.Errorf("encoding the output of %s: %w", name, err)
		}
		// b is neither kept nor changed: the string can share its bytes.
		return unsafe.String(unsafe.SliceData(b), len(b)), nil
	}
	return t
}

// decoder returns the function that validates the arguments of req
// against the schema and decodes them into an In, in one pass when
// argcheck can. A pointer input type gets a fresh value to decode into.
func decoder[In any](check *argcheck.Validator) func(req *ToolRequest) (In, error) {
	rt := reflect.TypeFor[In]()
	if rt.Kind() == reflect.Pointer {
		d := argcheck.NewDecoder(check, rt.Elem())
		return func(req *ToolRequest) (In, error) {
			v := reflect.New(rt.Elem())
			redecode, err := d.Decode(req.Arguments, sameString(req), v.UnsafePointer())
			if err == nil && redecode {
				v.Elem().SetZero()
				err = json.Unmarshal(req.Arguments, v.Interface())
			}
			return v.Interface().(In), err
		}
	}
	d := argcheck.NewDecoder(check, rt)
	return func(req *ToolRequest) (In, error) {
		var in In
		redecode, err := d.Decode(req.Arguments, sameString(req), unsafe.Pointer(&in))
		if err != nil || !redecode {
			return in, err
		}
		var again In
		err = json.Unmarshal(req.Arguments, &again)
		return again, err
	}
}

// sameString returns the call's arguments as the model sent them when
// req.Arguments holds the same bytes, so that decoded strings share them,
// and "" otherwise.
func sameString(req *ToolRequest) string {
	if string(req.Arguments) == req.Call.Arguments {
		return req.Call.Arguments
	}
	return ""
}

// Name returns the tool's name.
func (t *Tool) Name() string { return t.def.Name }

// Definition returns the tool's definition. The schema is shared: do not
// modify it.
func (t *Tool) Definition() ToolDefinition { return t.def }

// Metadata returns the tool's metadata.
func (t *Tool) Metadata() ToolMetadata { return t.meta }

// WithMetadata returns a copy of t with other metadata; t is unchanged.
func (t *Tool) WithMetadata(meta ToolMetadata) *Tool {
	c := *t
	c.meta = meta
	return &c
}

// Call runs the tool for req. Empty arguments are treated as "{}";
// arguments that are not valid JSON, or (typed tier) do not match the
// schema, give an error wrapping [ErrInvalidArguments] and the tool's
// function does not run.
//
// Call does not consult any confirmation policy: it is the raw way in.
// Agents should run calls through a [Client].
func (t *Tool) Call(ctx context.Context, req *ToolRequest) (string, error) {
	return t.call(ctx, req, nil)
}

// call is [Tool.Call] with the manager's start hook ([plan.start]), which
// runs, when set, once the arguments are normalised and right before the
// tool is entered, its middleware and guards included: a call that fails
// earlier (invalid arguments) never starts.
func (t *Tool) call(ctx context.Context, req *ToolRequest, start func(context.Context, *ToolRequest) error) (string, error) {
	if t.run == nil && start == nil {
		return "", fmt.Errorf("%s: %w", t.def.Name, ErrNoImplementation)
	}
	args, err := normalizeArguments(req.Call.Arguments)
	if err != nil {
		return "", err
	}
	req.Arguments = args
	if start != nil {
		if err := start(ctx, req); err != nil {
			return "", err
		}
		if t.run == nil {
			return "", fmt.Errorf("%s: %w", t.def.Name, ErrNoImplementation)
		}
	}
	return t.run(ctx, req)
}

var emptyObject = json.RawMessage("{}")

func normalizeArguments(s string) (json.RawMessage, error) {
	if isBlank(s) {
		return emptyObject, nil
	}
	b := []byte(s)
	if !argcheck.Valid(b) {
		return nil, fmt.Errorf("%w: not valid JSON", ErrInvalidArguments)
	}
	return b, nil
}

func isBlank(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ', '\t', '\n', '\r':
		default:
			return false
		}
	}
	return true
}

type toolJSON2 struct {
	ToolDefinition
	Metadata *ToolMetadata `json:"metadata,omitempty"`
}

// MarshalJSON writes the tool's definition and metadata:
// {"name","description","input_schema","metadata":{...}}. The function is
// not part of the JSON form.
func (t *Tool) MarshalJSON() ([]byte, error) {
	v := toolJSON2{ToolDefinition: t.def}
	if t.meta != (ToolMetadata{}) {
		m := t.meta
		v.Metadata = &m
	}
	return json.Marshal(v)
}

// UnmarshalJSON reads the form written by [Tool.MarshalJSON]. The decoded
// tool has no function: calling it gives [ErrNoImplementation]. This lets a
// stored prompt be inspected without letting stored data decide what runs.
func (t *Tool) UnmarshalJSON(data []byte) error {
	var v toolJSON2
	if err := json.Unmarshal(data, &v); err != nil {
		return fmt.Errorf("toolgate: tool: %w", err)
	}
	if err := checkToolDefinition(v.ToolDefinition); err != nil {
		return err
	}
	*t = Tool{def: v.ToolDefinition}
	if v.Metadata != nil {
		t.meta = *v.Metadata
	}
	return nil
}

// Wrap returns a copy of t whose function is wrapped by middleware, the
// first outermost; t is unchanged and Wrap() returns t itself. Middleware
// sees each call after the arguments were normalised (see [Tool.Call]) and
// before a typed tool's validation. Guards use it to check a call right
// before it runs, whoever runs the tool. Run by a [Client], a panic of
// the middleware aborts the run with a [*PanicError], while a panic of the
// tool's own function is a failed call ([ErrToolPanicked]).
func (t *Tool) Wrap(mw ...func(next ToolFunc) ToolFunc) *Tool {
	if len(mw) == 0 {
		return t
	}
	run := t.run
	if run == nil {
		name := t.def.Name
		run = func(context.Context, *ToolRequest) (string, error) {
			return "", fmt.Errorf("%s: %w", name, ErrNoImplementation)
		}
	} else if !t.wrapped {
		run = ownFunction(t.def.Name, run)
	}
	for i := len(mw) - 1; i >= 0; i-- {
		run = mw[i](run)
	}
	c := *t
	c.run, c.wrapped = run, true
	return &c
}

// ownFunction returns run, the tool's own function, with a panic turned
// into an error wrapping [ErrToolPanicked], so that a panic that reaches
// the manager through middleware is known to be the middleware's.
func ownFunction(name string, run ToolFunc) ToolFunc {
	return func(ctx context.Context, req *ToolRequest) (content string, err error) {
		defer func() {
			if v := recover(); v != nil {
				content, err = "", &toolPanic{tool: name, value: v, stack: debug.Stack()}
			}
		}()
		return run(ctx, req)
	}
}
