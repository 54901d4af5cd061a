package node

import (
	"math/big"

	"github.com/shardis/shardis/internal/node/strops"
)

// The long double arithmetic of INCRBYFLOAT and HINCRBYFLOAT lives in
// strops; these names serve the hash commands.

const longDoublePrec = strops.LongDoublePrec

func parseLongDouble(b []byte) (*big.Float, bool) { return strops.ParseLongDouble(b) }

func formatLongDouble(v *big.Float) []byte { return strops.FormatLongDouble(v) }

func longDoubleOverflows(f *big.Float) bool { return strops.LongDoubleOverflows(f) }
