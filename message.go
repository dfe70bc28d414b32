package toolgate

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Role names the author of a [Message]. It is the "role" field of the
// message's JSON form.
type Role string

// The roles of the four message kinds.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one message of a conversation: a [*SystemMessage], a
// [*UserMessage], an [*AssistantMessage] or a [*ToolMessage]. The set is
// closed; use a type switch to tell them apart.
//
// Every message marshals to a JSON object whose "role" field says which kind
// it is. Decode a single message with [UnmarshalMessage] and a list with
// [UnmarshalMessages]; [Prompt] and the other types that hold messages
// decode them for you.
type Message interface {
	// Role reports the kind of the message.
	Role() Role
	isMessage()
}

// SystemMessage holds instructions for the model.
//
// JSON: {"role":"system","text":"..."}.
type SystemMessage struct {
	Text string
}

// UserMessage is what the end user said: its Text, followed by Parts
// (images, files, more text) when it has any.
//
// JSON: {"role":"user","text":"..."} plus "parts":[...] when set (see
// [Part]). Parts may hold only [TextPart] without provider data and
// [FilePart].
type UserMessage struct {
	Text  string
	Parts Parts
}

// AssistantMessage is a reply of the model: text, tool calls, or both.
// A reply that holds tool calls is what the [Client] runs or pauses.
//
// Text and ToolCalls are the reply's text and calls, always. Parts is set
// when the provider gave more than that (reasoning, signatures, images):
// then it is the reply's whole content in order, its [TextPart] texts
// joined are Text and its [ToolCallPart] values name each call of
// ToolCalls once, in order. [AssistantMessage.Content] gives the content
// in order in either case. A reply whose parts disagree with its text or
// calls is invalid: decoding it fails and a [Client] refuses it from a
// model.
//
// JSON: {"role":"assistant","text":"...","tool_calls":[...],"parts":[...]};
// each field is omitted when empty. Readers that know no parts still find
// the text and calls.
type AssistantMessage struct {
	Text      string
	ToolCalls []ToolCall
	Parts     Parts
}

// ToolMessage carries the results of the calls of one reply, one result per
// call, in the reply's call order.
//
// JSON: {"role":"tool","results":[...]}.
type ToolMessage struct {
	Results []ToolResult
}

// ToolCall is one tool call of a reply, exactly as the model produced it.
//
// ID may be empty (some providers give none) and need not be unique;
// [AssistantMessage.CallKeys] derives the keys that decisions use. Arguments is the raw
// JSON text of the arguments; it is kept verbatim, even when it is not valid
// JSON, so that a stored reply is the reply the model made.
//
// JSON: {"id":"...","name":"...","arguments":"..."}; id is omitted when
// empty and arguments is a JSON string holding the raw text.
type ToolCall struct {
	ID        string `json:"id,omitempty"`
	Name      string `json:"name"`
	Arguments string `json:"arguments,omitempty"`
}

// ToolResult is the answer to one tool call.
//
// CallID and Name are the call's original id and tool name. Content is what
// the model reads: the tool's JSON output, an error text, or the message of a
// denial. Status says which of these it is.
//
// When a person allowed the call with edited arguments
// ([AllowWithArguments]), EditedArguments holds them and Content opens with
// [EditNote] and the same arguments, so that the model knows what ran; the
// reply still holds the arguments the model gave.
//
// Parts are files (such as images) and more text that follow Content, for
// the providers that accept them in tool results; they hold only
// [FilePart] and [TextPart] without provider data.
//
// JSON: {"call_id":"...","name":"...","content":"...","status":"ok"}, plus
// "edited_arguments" (a JSON string holding the raw text, like a call's
// "arguments") when the arguments were edited, and "parts" when set.
type ToolResult struct {
	CallID  string       `json:"call_id,omitempty"`
	Name    string       `json:"name"`
	Content string       `json:"content"`
	Status  ResultStatus `json:"status"`
	// EditedArguments are the arguments the call ran with instead of the
	// model's, as JSON text; "" when nobody edited them.
	EditedArguments string `json:"edited_arguments,omitempty"`
	Parts           Parts  `json:"parts,omitempty"`
}

// ResultStatus says how a [ToolResult] came to be. The zero value is
// [ResultOK].
type ResultStatus uint8

const (
	// ResultOK: the tool ran and returned normally. JSON "ok".
	ResultOK ResultStatus = iota
	// ResultError: the call failed (unknown tool, invalid arguments, the
	// tool returned an error); the content explains. JSON "error".
	ResultError
	// ResultDenied: a person denied the call; it did not run and the content
	// is the decision's message. Denied calls do not count against limits.
	// JSON "denied".
	ResultDenied
	// ResultSkipped: the call did not run because the turn stopped first
	// (a tool call limit was reached). Skipped calls do not count against
	// limits. JSON "skipped".
	ResultSkipped
	// ResultRefused: an authorization guard refused the call (or another
	// call of its reply); it did not run. Refused calls do not count
	// against limits. JSON "refused".
	ResultRefused
	// ResultExpired: nobody decided the call before its pause expired; it
	// did not run and the content is [ExpiredMessage]. Unlike a denial, no
	// person refused it. Expired calls do not count against limits. JSON
	// "expired".
	ResultExpired
	// ResultInterrupted: the call was recorded as started by a resumption
	// that stopped (its process died) before storing a result; a recovery
	// ([Client.RecoverPause]) answers it with [InterruptedMessage] instead
	// of running it again. Whether the tool's effect happened is unknown.
	// Interrupted calls count against limits. JSON "interrupted".
	ResultInterrupted
)

var resultStatusNames = [...]string{"ok", "error", "denied", "skipped", "refused", "expired", "interrupted"}

// String returns the JSON name of the status.
func (s ResultStatus) String() string {
	if int(s) < len(resultStatusNames) {
		return resultStatusNames[s]
	}
	return fmt.Sprintf("ResultStatus(%d)", uint8(s))
}

// Ran reports whether a result with this status comes from a call that was
// allowed to run and started (ok, error or interrupted). Limits count
// exactly these calls.
func (s ResultStatus) Ran() bool { return s == ResultOK || s == ResultError || s == ResultInterrupted }

// MarshalText implements [encoding.TextMarshaler].
func (s ResultStatus) MarshalText() ([]byte, error) {
	if int(s) >= len(resultStatusNames) {
		return nil, fmt.Errorf("toolgate: invalid result status %d", uint8(s))
	}
	return []byte(resultStatusNames[s]), nil
}

// UnmarshalText implements [encoding.TextUnmarshaler]. It accepts only the
// seven names; anything else is an error.
func (s *ResultStatus) UnmarshalText(b []byte) error {
	for i, n := range resultStatusNames {
		if string(b) == n {
			*s = ResultStatus(i)
			return nil
		}
	}
	return fmt.Errorf("toolgate: unknown result status %q", b)
}

func (*SystemMessage) Role() Role    { return RoleSystem }
func (*UserMessage) Role() Role      { return RoleUser }
func (*AssistantMessage) Role() Role { return RoleAssistant }
func (*ToolMessage) Role() Role      { return RoleTool }

func (*SystemMessage) isMessage()    {}
func (*UserMessage) isMessage()      {}
func (*AssistantMessage) isMessage() {}
func (*ToolMessage) isMessage()      {}

// HasToolCalls reports whether the reply asks for at least one tool call.
// It is false for a nil message.
func (m *AssistantMessage) HasToolCalls() bool { return m != nil && len(m.ToolCalls) > 0 }

// textJSON is the wire form shared by system and user messages.
type textJSON struct {
	Role  Role   `json:"role"`
	Text  string `json:"text"`
	Parts Parts  `json:"parts,omitempty"`
}

type assistantJSON struct {
	Role      Role       `json:"role"`
	Text      string     `json:"text,omitempty"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	Parts     Parts      `json:"parts,omitempty"`
}

type toolJSON struct {
	Role    Role         `json:"role"`
	Results []ToolResult `json:"results"`
}

// MarshalJSON implements [json.Marshaler].
func (m *SystemMessage) MarshalJSON() ([]byte, error) {
	return json.Marshal(textJSON{Role: RoleSystem, Text: m.Text})
}

// MarshalJSON implements [json.Marshaler].
func (m *UserMessage) MarshalJSON() ([]byte, error) {
	return json.Marshal(textJSON{Role: RoleUser, Text: m.Text, Parts: m.Parts})
}

// MarshalJSON implements [json.Marshaler].
func (m *AssistantMessage) MarshalJSON() ([]byte, error) {
	return json.Marshal(assistantJSON{RoleAssistant, m.Text, m.ToolCalls, m.Parts})
}

// MarshalJSON implements [json.Marshaler]. Results is always an array.
func (m *ToolMessage) MarshalJSON() ([]byte, error) {
	rs := m.Results
	if rs == nil {
		rs = []ToolResult{}
	}
	return json.Marshal(toolJSON{RoleTool, rs})
}

// UnmarshalJSON implements [json.Unmarshaler]. It reads the form written by
// [SystemMessage.MarshalJSON]; the role must be "system".
func (m *SystemMessage) UnmarshalJSON(data []byte) error {
	return unmarshalKind(data, m)
}

// UnmarshalJSON implements [json.Unmarshaler]. It reads the form written by
// [UserMessage.MarshalJSON]; the role must be "user".
func (m *UserMessage) UnmarshalJSON(data []byte) error {
	return unmarshalKind(data, m)
}

// UnmarshalJSON implements [json.Unmarshaler]. It reads the form written by
// [AssistantMessage.MarshalJSON] (as in [Generation]); the role must be
// "assistant".
func (m *AssistantMessage) UnmarshalJSON(data []byte) error {
	return unmarshalKind(data, m)
}

// UnmarshalJSON implements [json.Unmarshaler]. It reads the form written by
// [ToolMessage.MarshalJSON]; the role must be "tool".
func (m *ToolMessage) UnmarshalJSON(data []byte) error {
	return unmarshalKind(data, m)
}

// unmarshalKind decodes data with [UnmarshalMessage] into dst, which must
// be of the kind the role names.
func unmarshalKind[T SystemMessage | UserMessage | AssistantMessage | ToolMessage](data []byte, dst *T) error {
	msg, err := UnmarshalMessage(data)
	if err != nil {
		return err
	}
	got, ok := any(msg).(*T)
	if !ok {
		return fmt.Errorf("%w: got a %s message, want %s", ErrInvalidMessage, msg.Role(), any(dst).(Message).Role())
	}
	*dst = *got
	return nil
}

func (r Role) known() bool {
	return r == RoleSystem || r == RoleUser || r == RoleAssistant || r == RoleTool
}

// messageJSON is the union of the wire forms, so that a message is decoded
// in one pass whatever its role.
type messageJSON struct {
	Role      *Role        `json:"role"`
	Text      string       `json:"text"`
	ToolCalls []ToolCall   `json:"tool_calls"`
	Parts     Parts        `json:"parts"`
	Results   []ToolResult `json:"results"`
}

// UnmarshalMessage decodes one message from its JSON form. The "role" field
// selects the kind; an unknown or missing role, a field of the wrong type
// (also one the role does not use) or a value that is not an object is an
// error wrapping [ErrInvalidMessage]. Fields the role does not use are
// otherwise ignored.
func UnmarshalMessage(data []byte) (Message, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return nil, fmt.Errorf("%w: not a JSON object", ErrInvalidMessage)
	}
	var v messageJSON
	if err := json.Unmarshal(data, &v); err != nil {
		if v.Role != nil && v.Role.known() {
			return nil, fmt.Errorf("%w: %s message: %v", ErrInvalidMessage, *v.Role, err)
		}
		return nil, fmt.Errorf("%w: %v", ErrInvalidMessage, err)
	}
	if v.Role == nil {
		return nil, fmt.Errorf("%w: missing role", ErrInvalidMessage)
	}
	if !v.Role.known() {
		return nil, fmt.Errorf("%w: unknown role %q", ErrInvalidMessage, *v.Role)
	}
	switch *v.Role {
	case RoleSystem:
		if v.Parts != nil {
			return nil, fmt.Errorf("%w: a system message has no parts", ErrInvalidMessage)
		}
		return &SystemMessage{Text: v.Text}, nil
	case RoleUser:
		if err := checkUserParts(v.Parts); err != nil {
			return nil, fmt.Errorf("user message: %w", err)
		}
		return &UserMessage{Text: v.Text, Parts: v.Parts}, nil
	case RoleAssistant:
		m := &AssistantMessage{Text: v.Text, ToolCalls: v.ToolCalls, Parts: v.Parts}
		if err := checkAssistantParts(m); err != nil {
			return nil, fmt.Errorf("assistant message: %w", err)
		}
		return m, nil
	default: // RoleTool
		if v.Results == nil {
			v.Results = []ToolResult{}
		}
		for i, r := range v.Results {
			if err := checkUserParts(r.Parts); err != nil {
				return nil, fmt.Errorf("tool message: result %d: %w", i, err)
			}
		}
		return &ToolMessage{Results: v.Results}, nil
	}
}

// UnmarshalMessages decodes a JSON array of messages. A null element is an
// error; a JSON null or empty array gives an empty list.
func UnmarshalMessages(data []byte) ([]Message, error) {
	var raws []json.RawMessage
	if err := json.Unmarshal(data, &raws); err != nil {
		return nil, fmt.Errorf("%w: messages: %v", ErrInvalidMessage, err)
	}
	return decodeMessages(raws)
}

func decodeMessages(raws []json.RawMessage) ([]Message, error) {
	if len(raws) == 0 {
		return nil, nil
	}
	msgs := make([]Message, len(raws))
	for i, raw := range raws {
		m, err := UnmarshalMessage(raw)
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		msgs[i] = m
	}
	return msgs, nil
}

// checkMessages reports an error for a nil entry (a typed nil pointer or a
// nil interface), which cannot be marshalled or sent to a model.
func checkMessages(msgs []Message) error {
	for i, m := range msgs {
		if isNilMessage(m) {
			return fmt.Errorf("%w: message %d is nil", ErrInvalidMessage, i)
		}
	}
	return nil
}

func isNilMessage(m Message) bool {
	switch m := m.(type) {
	case nil:
		return true
	case *SystemMessage:
		return m == nil
	case *UserMessage:
		return m == nil
	case *AssistantMessage:
		return m == nil
	case *ToolMessage:
		return m == nil
	}
	return false
}
