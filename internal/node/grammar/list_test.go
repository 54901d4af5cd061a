package grammar

import "testing"

func TestParseLPos(t *testing.T) {
	cases := []struct {
		in   string
		want LPos
		err  error
	}{
		{"", LPos{Rank: 1, Count: -1}, nil},
		{"RANK -2 COUNT 0 MAXLEN 10", LPos{Rank: -2, Count: 0, MaxLen: 10}, nil},
		{"rank 0", LPos{}, ErrLPosRank},
		{"rank x", LPos{}, ErrNotInt},
		{"count -1", LPos{}, ErrLPosCount},
		{"maxlen -1", LPos{}, ErrLPosMaxLen},
		{"maxlen x", LPos{}, ErrLPosMaxLen},
		{"rank", LPos{}, ErrSyntax},
		{"foo 1", LPos{}, ErrSyntax},
	}
	for _, tc := range cases {
		o, err := ParseLPos(argv(tc.in))
		if err != tc.err || (err == nil && o != tc.want) {
			t.Errorf("ParseLPos(%q) = %+v %v; want %+v %v", tc.in, o, err, tc.want, tc.err)
		}
	}
}
