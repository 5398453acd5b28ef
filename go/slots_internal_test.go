package esbulk

import (
	"context"
	"testing"
)

func TestSlots(t *testing.T) {
	var s slots
	a := s.put(BulkIndexerItem{DocumentID: "a"}, 1, context.Background(), 1)
	b := s.put(BulkIndexerItem{DocumentID: "b"}, 2, context.Background(), 2)
	if a == 0 || b == 0 || a == b {
		t.Fatalf("opaques %d, %d: want distinct and not 0", a, b)
	}
	if s.len() != 2 {
		t.Fatalf("len %d, want 2", s.len())
	}
	p, ok := s.take(a)
	if !ok || p.item.DocumentID != "a" || p.action != 1 {
		t.Fatalf("take(a) = %+v, %v", p, ok)
	}
	if _, ok := s.take(a); ok {
		t.Fatal("an opaque was taken twice")
	}
	for _, id := range []uint64{0, 99} {
		if _, ok := s.take(id); ok {
			t.Fatalf("take(%d) found an item", id)
		}
	}
	if s.items[a-1].item.DocumentID != "" || s.items[a-1].used {
		t.Fatal("a taken slot still holds its item")
	}
	c := s.put(BulkIndexerItem{DocumentID: "c"}, 3, nil, 3)
	if c != a {
		t.Fatalf("freed slot not reused: %d, want %d", c, a)
	}
	// accept: only the item that has the slot now (gen), and accepted
	// counts the items numbered up to a mark
	if s.accept(a, 1, 1) {
		t.Fatal("accept of a taken item (slot reused by c) succeeded")
	}
	if !s.accept(b, 2, 1) || !s.accept(c, 3, 2) {
		t.Fatal("accept of a held item failed")
	}
	if n := s.accepted(1); n != 1 {
		t.Fatalf("accepted(1) = %d, want 1", n)
	}
	if n := s.accepted(2); n != 2 {
		t.Fatalf("accepted(2) = %d, want 2", n)
	}
	if p, ok := s.take(b); !ok || p.item.DocumentID != "b" {
		t.Fatalf("take(b) = %+v, %v", p, ok)
	}
	if p, ok := s.take(c); !ok || p.item.DocumentID != "c" {
		t.Fatalf("take(c) = %+v, %v", p, ok)
	}
	if s.len() != 0 {
		t.Fatalf("len %d, want 0", s.len())
	}
	s.reset()
	if _, ok := s.take(c); ok {
		t.Fatal("reset kept an item")
	}
}
