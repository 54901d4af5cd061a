package grammar

// LPos is LPOS's "[RANK rank] [COUNT num-matches] [MAXLEN len]".
type LPos struct {
	Rank   int64 // RANK, 1 by default; negative searches from the tail
	Count  int64 // COUNT, -1 without it (a single reply, not an array)
	MaxLen int64 // MAXLEN, 0 for no limit
}

// ParseLPos parses LPOS's options (args after the element), with
// Redis's checks and texts.
func ParseLPos(args [][]byte) (LPos, error) {
	o := LPos{Rank: 1, Count: -1}
	var err error
	for j := 0; j < len(args); j++ {
		more := j+1 < len(args)
		switch {
		case eq(args[j], "rank") && more:
			j++
			v, err := Int(args[j])
			if err != nil {
				return o, err
			}
			if v == 0 {
				return o, ErrLPosRank
			}
			o.Rank = v
		case eq(args[j], "count") && more:
			j++
			if o.Count, err = nonNegative(args[j], ErrLPosCount); err != nil {
				return o, err
			}
		case eq(args[j], "maxlen") && more:
			j++
			if o.MaxLen, err = nonNegative(args[j], ErrLPosMaxLen); err != nil {
				return o, err
			}
		default:
			return o, ErrSyntax
		}
	}
	return o, nil
}
