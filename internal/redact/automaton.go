package redact

import "sort"

// automaton is an Aho-Corasick matcher over byte classes: bytes that occur
// in no pattern share class 0. The root's transitions are a dense table
// (text that holds no secret stays at the root, one lookup per byte); the
// other states keep their edges sorted by class and fall back along their
// failure links, which costs at most two steps per byte amortised. Memory
// is linear in the patterns' total length (a dense table for every state
// would be states x classes: hundreds of MiB for a few long secrets with
// many escaped forms).
type automaton struct {
	class    [256]uint16
	root     []int32 // root's transition for every class
	edgeFrom []int32 // state s's edges are edges[edgeFrom[s]:edgeFrom[s+1]]
	edges    []edge
	fail     []int32
	depth    []int32 // length of the text a state stands for
	out      []int32 // longest pattern that ends at a state (0: none)
}

type edge struct {
	class uint16
	to    int32
}

// span is a masked byte range [start, end).
type span struct{ start, end int }

func build(patterns []string) *automaton {
	a := &automaton{}
	var used [256]bool
	for _, p := range patterns {
		for i := 0; i < len(p); i++ {
			used[p[i]] = true
		}
	}
	n := 1
	for b := range used {
		if used[b] {
			a.class[b] = uint16(n)
			n++
		}
	}
	// The trie, with edges in per-state maps while it grows.
	children := []map[uint16]int32{{}}
	depth := []int32{0}
	out := []int32{0}
	for _, p := range patterns {
		if p == "" {
			continue
		}
		s := int32(0)
		for i := 0; i < len(p); i++ {
			c := a.class[p[i]]
			next, ok := children[s][c]
			if !ok {
				next = int32(len(children))
				children = append(children, map[uint16]int32{})
				depth = append(depth, depth[s]+1)
				out = append(out, 0)
				children[s][c] = next
			}
			s = next
		}
		out[s] = depth[s]
	}
	// Flatten the edges, sorted by class.
	a.edgeFrom = make([]int32, len(children)+1)
	for s, ch := range children {
		a.edgeFrom[s] = int32(len(a.edges))
		start := len(a.edges)
		for c, to := range ch {
			a.edges = append(a.edges, edge{c, to})
		}
		sort.Slice(a.edges[start:], func(i, j int) bool { return a.edges[start+i].class < a.edges[start+j].class })
	}
	a.edgeFrom[len(children)] = int32(len(a.edges))
	a.root = make([]int32, n)
	for _, e := range a.edges[a.edgeFrom[0]:a.edgeFrom[1]] {
		a.root[e.class] = e.to
	}
	// Failure links and outputs, breadth first: a state's failure link
	// is shallower, so it is complete when the state is reached.
	a.fail = make([]int32, len(children))
	a.depth, a.out = depth, out
	queue := make([]int32, 0, len(children))
	for _, e := range a.edges[a.edgeFrom[0]:a.edgeFrom[1]] {
		queue = append(queue, e.to)
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		if a.out[s] == 0 {
			a.out[s] = a.out[a.fail[s]]
		}
		for _, e := range a.edges[a.edgeFrom[s]:a.edgeFrom[s+1]] {
			a.fail[e.to] = a.step(a.fail[s], e.class)
			queue = append(queue, e.to)
		}
	}
	return a
}

// step is the transition from state s on class c.
func (a *automaton) step(s int32, c uint16) int32 {
	for s != 0 {
		es := a.edges[a.edgeFrom[s]:a.edgeFrom[s+1]]
		if len(es) == 1 { // most states: one edge
			if es[0].class == c {
				return es[0].to
			}
		} else if i := sort.Search(len(es), func(i int) bool { return es[i].class >= c }); i < len(es) && es[i].class == c {
			return es[i].to
		}
		s = a.fail[s]
	}
	return a.root[c]
}

// spans returns the byte ranges of s covered by a match, merged where
// they overlap or touch, in order.
func (a *automaton) spans(s string, spans []span) []span {
	st := int32(0)
	for i := 0; i < len(s); i++ {
		c := a.class[s[i]]
		if st == 0 {
			st = a.root[c]
		} else {
			st = a.step(st, c)
		}
		if l := a.out[st]; l > 0 {
			sp := span{i + 1 - int(l), i + 1}
			for len(spans) > 0 && spans[len(spans)-1].end >= sp.start {
				sp.start = min(sp.start, spans[len(spans)-1].start)
				spans = spans[:len(spans)-1]
			}
			spans = append(spans, sp)
		}
	}
	return spans
}

// first reports whether s holds a match.
func (a *automaton) first(s string) bool {
	st := int32(0)
	for i := 0; i < len(s); i++ {
		c := a.class[s[i]]
		if st == 0 {
			st = a.root[c]
		} else {
			st = a.step(st, c)
		}
		if a.out[st] > 0 {
			return true
		}
	}
	return false
}

// tail returns the length of the longest end of s that begins a pattern.
func (a *automaton) tail(s string) int {
	st := int32(0)
	for i := 0; i < len(s); i++ {
		c := a.class[s[i]]
		if st == 0 {
			st = a.root[c]
		} else {
			st = a.step(st, c)
		}
	}
	return int(a.depth[st])
}
