package compact

// units groups messages that must be evicted together: an assistant message
// with tool calls and every result of those calls (wherever they are, in any
// order), transitively. A message outside any pairing is a unit of its own.
// It returns the unit of each message (a representative index).
func units(msgs []Message) []int {
	parent := make([]int, len(msgs))
	for i := range parent {
		parent[i] = i
	}
	find := func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	union := func(a, b int) {
		ra, rb := find(a), find(b)
		if ra == rb {
			return
		}
		if ra < rb {
			parent[rb] = ra
		} else {
			parent[ra] = rb
		}
	}
	// firstCall finds results that come before their call (out of order).
	var firstCall map[string]int
	for i := range msgs {
		for _, c := range msgs[i].ToolCalls {
			if c.ID == "" {
				continue
			}
			if firstCall == nil {
				firstCall = make(map[string]int)
			}
			if _, ok := firstCall[c.ID]; !ok {
				firstCall[c.ID] = i
			}
		}
	}
	// lastCall maps an ID to the latest call with it so far: clients that
	// reuse IDs ("call_0" every turn) pair each result with its own call.
	lastCall := make(map[string]int, len(firstCall))
	run := -1 // the assistant message whose results are being read, by position
	for i := range msgs {
		m := &msgs[i]
		if len(m.ToolCalls) > 0 {
			for _, c := range m.ToolCalls {
				if c.ID != "" {
					lastCall[c.ID] = i
				}
			}
			run = i
			continue
		}
		if m.Role != RoleTool {
			if m.Role != RoleSystem { // a system note between results does not end them
				run = -1
			}
			continue
		}
		if m.ToolCallID != "" {
			if j, ok := lastCall[m.ToolCallID]; ok {
				union(i, j)
				continue
			}
			if j, ok := firstCall[m.ToolCallID]; ok {
				union(i, j)
				continue
			}
		}
		if run >= 0 { // matched by position, as Ollama does
			union(i, run)
		}
	}
	for i := range parent {
		parent[i] = find(i)
	}
	return parent
}
