package checker

// procTable finds the state of a worker process by its number: in a slice
// for the numbers a run gives (small, dense: a crashed process's worker goes
// on under a new number a few above it), in a map for any other (an
// imported history may number its processes as it likes). The streaming
// checks look a process up at every op, which a map alone makes costly.
type procTable[T any] struct {
	dense  []*T
	sparse map[int]*T
}

// procTableDense is the largest process number kept in the slice.
const procTableDense = 1 << 20

// get returns the state of process p, nil when it has none.
func (t *procTable[T]) get(p int) *T {
	if p >= 0 && p < len(t.dense) {
		return t.dense[p]
	}
	if p >= 0 && p < procTableDense {
		return nil
	}
	return t.sparse[p]
}

// set gives process p the state v (nil: none).
func (t *procTable[T]) set(p int, v *T) {
	if p >= 0 && p < procTableDense {
		if p >= len(t.dense) {
			if v == nil {
				return
			}
			t.dense = append(t.dense, make([]*T, p+1-len(t.dense))...)
		}
		t.dense[p] = v
		return
	}
	if v == nil {
		delete(t.sparse, p)
		return
	}
	if t.sparse == nil {
		t.sparse = map[int]*T{}
	}
	t.sparse[p] = v
}

// each calls f for every process with a state, the slice's in order of
// their numbers first.
func (t *procTable[T]) each(f func(p int, v *T)) {
	for p, v := range t.dense {
		if v != nil {
			f(p, v)
		}
	}
	for p, v := range t.sparse {
		f(p, v)
	}
}
