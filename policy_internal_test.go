package toolgate

import "testing"

func TestPolicies(t *testing.T) {
	flagged := ToolMetadata{RequiresConfirmation: true}
	plain := ToolMetadata{}
	call := func(name, args string) ToolCall {
		return ToolCall{ID: "1", Name: name, Arguments: args}
	}
	names := []string{"mcp.delete", "wire"}
	named := forTools(names...)
	names[0] = "changed" // forTools keeps its own copy
	tests := []struct {
		name   string
		policy confirmationPolicy
		call   ToolCall
		meta   ToolMetadata
		want   bool
	}{
		{"fromMetadata flagged", fromMetadata(), call("x", ""), flagged, true},
		{"fromMetadata plain", fromMetadata(), call("x", ""), plain, false},
		{"forTools named", named, call("mcp.delete", ""), plain, true},
		{"forTools named by a prefix-less name", named, call("delete", ""), plain, false},
		{"forTools other", named, call("read", ""), flagged, false},
		{"forTools none", forTools(), call("read", ""), flagged, false},
		{"Or empty", Or(), call("x", ""), flagged, false},
		{"Or nils", Or(nil, nil), call("x", ""), flagged, false},
		{"Or first", Or(fromMetadata(), named), call("x", ""), flagged, true},
		{"Or second", Or(nil, fromMetadata(), named), call("wire", ""), plain, true},
		{"Or neither", Or(fromMetadata(), named), call("read", ""), plain, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.policy(tt.call, tt.meta); got != tt.want {
				t.Errorf("policy(%+v, %+v) = %v, want %v", tt.call, tt.meta, got, tt.want)
			}
		})
	}
}
