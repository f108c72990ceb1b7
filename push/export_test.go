package push

// SetDrowningScan sets how many ids per entry of a page a drowning
// reader's scan reads before it falls back to the merge.
func SetDrowningScan(s *Store, perEntry int) { s.puller.scanPerEntry = perEntry }
