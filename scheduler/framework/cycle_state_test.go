package framework

import (
	"sync"
	"testing"
)

type intState struct{ v int }

func (s *intState) Clone() StateData { c := *s; return &c }

func TestCycleState(t *testing.T) {
	c := NewCycleState()
	if _, err := c.Read("a"); err == nil {
		t.Fatal("Read of a missing key succeeded")
	}
	c.Write("a", &intState{1})
	c.Write("b", &intState{2})
	c.Write("a", &intState{3}) // overwrite keeps one entry
	for key, want := range map[StateKey]int{"a": 3, "b": 2} {
		d, err := c.Read(key)
		if err != nil || d.(*intState).v != want {
			t.Fatalf("Read(%q) = %v, %v; want %d", key, d, err, want)
		}
	}
	if n := len(*c.entries.Load()); n != 2 {
		t.Fatalf("%d entries, want 2", n)
	}

	clone := c.Clone()
	d, _ := clone.Read("a")
	d.(*intState).v = 10
	if d, _ := c.Read("a"); d.(*intState).v != 3 {
		t.Fatalf("changing the clone's data changed the original: %d", d.(*intState).v)
	}
	clone.Write("c", &intState{4})
	if _, err := c.Read("c"); err == nil {
		t.Fatal("a write to the clone shows in the original")
	}
	if (*CycleState)(nil).Clone() != nil {
		t.Fatal("Clone of nil is not nil")
	}
}

// Readers on many goroutines while another key is written (run with -race).
func TestCycleStateConcurrentReads(t *testing.T) {
	c := NewCycleState()
	c.Write("a", &intState{1})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				if d, err := c.Read("a"); err != nil || d.(*intState).v != 1 {
					t.Errorf("Read(a) = %v, %v", d, err)
					return
				}
			}
		}()
	}
	for i := range 100 {
		c.Write("b", &intState{i})
	}
	wg.Wait()
}
