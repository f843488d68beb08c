package redlock

// A placed slice holds holdings that each know their place in it (pos: 1 +
// the index; 0 when not in it), so that adding one and taking any one out
// are constant work: the last takes the place of the one taken out. The
// owner's held locks and each bucket of a timeQueue are such slices.

// addPlaced appends h, which must not be in a slice of this kind, to items.
func addPlaced(items *[]*holding, h *holding, pos func(*holding) *int32) {
	*items = append(*items, h)
	*pos(h) = int32(len(*items))
}

// removePlaced takes h, which is in items, out of it.
func removePlaced(items *[]*holding, h *holding, pos func(*holding) *int32) {
	s := *items
	p := pos(h)
	i, last := int(*p)-1, len(s)-1
	if i != last {
		s[i] = s[last]
		*pos(s[i]) = int32(i + 1)
	}
	s[last] = nil
	*items = s[:last]
	*p = 0
}
