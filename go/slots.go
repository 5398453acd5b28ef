package esbulk

import "context"

// slots holds the items the library holds, in a slice indexed by the
// opaque each document carries (slot index + 1: 0 is never an opaque), with
// a free list: no allocation and no hashing per item, as a map of ids had.
// A slot is taken back by the result that carries its opaque, or by the Add
// that the library refused; the item is then zeroed in place, so that the
// slot keeps nothing of it (its Body, its callbacks) for the GC. Not safe
// for concurrent use: the indexer guards it with itemsMu.
type slots struct {
	items []pending
	free  []uint32
}

// put stores item, the Add's ctx and gen (a number no other item of the
// indexer has) and returns its opaque.
func (s *slots) put(item BulkIndexerItem, action int32, ctx context.Context, gen uint64) uint64 {
	var i uint32
	if n := len(s.free); n > 0 {
		i = s.free[n-1]
		s.free = s.free[:n-1]
	} else {
		s.items = append(s.items, pending{})
		i = uint32(len(s.items) - 1)
	}
	p := &s.items[i]
	p.item = item
	p.ctx = ctx
	p.gen = gen
	p.action = action
	p.used = true
	return uint64(i) + 1
}

// accept marks the item of opaque id and gen accepted by the library, as
// number acc; false when the slot no longer holds it (its result came first).
func (s *slots) accept(id, gen, acc uint64) bool {
	if id == 0 || id > uint64(len(s.items)) {
		return false
	}
	p := &s.items[id-1]
	if !p.used || p.gen != gen {
		return false
	}
	p.acc = acc
	return true
}

// accepted counts the items held that were accepted as number mark or
// before.
func (s *slots) accepted(mark uint64) int {
	n := 0
	for i := range s.items {
		if p := &s.items[i]; p.used && p.acc != 0 && p.acc <= mark {
			n++
		}
	}
	return n
}

// take returns the item of opaque id and frees its slot; ok is false when
// id holds none (never given, or already taken).
func (s *slots) take(id uint64) (p pending, ok bool) {
	if id == 0 || id > uint64(len(s.items)) || !s.items[id-1].used {
		return pending{}, false
	}
	i := uint32(id - 1)
	p = s.items[i]
	s.items[i] = pending{}
	s.free = append(s.free, i)
	return p, true
}

// reset forgets every item and the memory of the slots.
func (s *slots) reset() {
	s.items = nil
	s.free = nil
}

// len is how many items are held.
func (s *slots) len() int { return len(s.items) - len(s.free) }
