package toolgate_test

import (
	"testing"

	"github.com/toolgate/toolgate"
)

// FuzzCollect feeds arbitrary sequences of tool-call fragments, as a broken
// or hostile provider might send them, through the stream aggregator: it
// never panics, rejects out-of-range indexes, and yields one call per index
// used.
func FuzzCollect(f *testing.F) {
	f.Add([]byte{0, 'a', 1, 'b', 0, 'c'})
	f.Add([]byte{200, 'x', 3, '{', 3, '}'})
	f.Add([]byte{255, 255, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		var chunks []*toolgate.Chunk
		used := map[int]bool{}
		bad := false
		for i := 0; i+1 < len(data); i += 2 {
			idx := int(int8(data[i])) * 5 // negative and large indexes too
			if idx < 0 || idx >= 512 {
				bad = true
			} else {
				used[idx] = true
			}
			d := toolgate.ToolCallDelta{Index: idx, Arguments: string(data[i+1 : i+2])}
			if data[i+1]%3 == 0 {
				d.ID, d.Name = "id", "tool"
			}
			chunks = append(chunks, &toolgate.Chunk{Text: "t", ToolCallDeltas: []toolgate.ToolCallDelta{d}})
		}
		resp, err := toolgate.Collect(func(yield func(*toolgate.Chunk, error) bool) {
			for _, c := range chunks {
				if !yield(c, nil) {
					return
				}
			}
		})
		if bad {
			if err == nil {
				t.Fatal("an out-of-range index was accepted")
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if n := len(resp.Message().ToolCalls); n != len(used) {
			t.Fatalf("%d calls for %d indexes", n, len(used))
		}
	})
}
