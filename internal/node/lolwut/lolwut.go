// Package lolwut renders LOLWUT's art as Redis 7.0 does: version 5's
// Schotter (after Georg Nees, in braille characters) and version 6's
// skyline (in colored spaces), and the plain version line otherwise. It
// parses LOLWUT's arguments; randomness comes in as a *rand.Rand.
package lolwut

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/shardis/shardis/internal/node/value"
)

// ErrNotInt refuses a VERSION or size argument that is not an integer.
var ErrNotInt = errors.New("ERR value is not an integer or out of range")

// Request is a parsed LOLWUT call.
type Request struct {
	// Version is the server's version, for the closing line.
	Version string
	// v5, v6: which art; args: its numeric arguments.
	v5, v6 bool
	args   []int64
}

// Parse parses LOLWUT's arguments (after the command name) for a server
// of version serverVersion: [VERSION v] [args ...].
func Parse(args [][]byte, serverVersion string) (Request, error) {
	ver := serverVersion
	rest := args
	if len(args) >= 2 && strings.EqualFold(string(args[0]), "version") {
		n, ok := value.ParseInt(args[1])
		if !ok {
			return Request{}, ErrNotInt
		}
		ver = strconv.FormatUint(uint64(uint32(n)), 10) + ".0.0"
		rest = args[2:]
	}
	r := Request{Version: serverVersion}
	r.v5 = (ver[0] == '5' && ver[1] == '.' && ver[2] != '9') || (ver[0] == '4' && ver[1] == '.' && ver[2] == '9')
	r.v6 = (ver[0] == '6' && ver[1] == '.' && ver[2] != '9') || (ver[0] == '5' && ver[1] == '.' && ver[2] == '9')
	parsed := 0 // the arguments the art takes: cols, squares per row, per column
	if r.v5 {
		parsed = 3
	} else if r.v6 {
		parsed = 2 // cols, rows
	}
	r.args = make([]int64, min(len(rest), parsed))
	for i := range r.args {
		n, ok := value.ParseInt(rest[i])
		if !ok {
			return Request{}, ErrNotInt
		}
		r.args[i] = n
	}
	return r, nil
}

// arg is the art's argument i, def when absent, clamped to lo..hi.
func (r *Request) arg(i int, def int64, lo, hi int64) int {
	v := def
	if i < len(r.args) {
		v = r.args[i]
	}
	return int(min(max(v, lo), hi))
}

// Render returns the text LOLWUT replies (as a verbatim string).
func (r *Request) Render(rng *rand.Rand) string {
	switch {
	case r.v5:
		art := schotter(rng, r.arg(0, 66, 1, 1000), r.arg(1, 8, 1, 200), r.arg(2, 12, 1, 200))
		return art + "\nGeorg Nees - schotter, plotter on paper, 1968. Redis ver. " + r.Version + "\n"
	case r.v6:
		art := skyline(rng, r.arg(0, 80, 1, 1000), r.arg(1, 20, 1, 1000))
		return art + "\nDedicated to the 8 bit game developers of past and present.\nOriginal 8 bit image from Plaguemon by hikikomori. Redis ver. " + r.Version + "\n"
	}
	return "Redis ver. " + r.Version + "\n"
}

// canvas is a grid of small color numbers.
type canvas struct {
	w, h int
	px   []byte
}

func newCanvas(w, h int, bg byte) *canvas {
	c := &canvas{w: w, h: h, px: make([]byte, w*h)}
	for i := range c.px {
		c.px[i] = bg
	}
	return c
}

func (cv *canvas) set(x, y int, color byte) {
	if x >= 0 && x < cv.w && y >= 0 && y < cv.h {
		cv.px[x+y*cv.w] = color
	}
}

func (cv *canvas) get(x, y int) byte {
	if x >= 0 && x < cv.w && y >= 0 && y < cv.h {
		return cv.px[x+y*cv.w]
	}
	return 0
}

// line draws with Bresenham's algorithm.
func (cv *canvas) line(x1, y1, x2, y2 int, color byte) {
	dx, dy := abs(x2-x1), abs(y2-y1)
	sx, sy := 1, 1
	if x1 >= x2 {
		sx = -1
	}
	if y1 >= y2 {
		sy = -1
	}
	err := dx - dy
	for {
		cv.set(x1, y1, color)
		if x1 == x2 && y1 == y2 {
			return
		}
		e2 := err * 2
		if e2 > -dy {
			err -= dy
			x1 += sx
		}
		if e2 < dx {
			err += dx
			y1 += sy
		}
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// square draws a square of side size centred on x, y, rotated by angle.
func (cv *canvas) square(x, y int, size, angle float32, color byte) {
	size = float32(math.Round(float64(size / 1.4142135623)))
	var px, py [4]int
	k := math.Pi/4 + float64(angle)
	for j := range 4 {
		px[j] = int(math.Round(math.Sin(k)*float64(size) + float64(x)))
		py[j] = int(math.Round(math.Cos(k)*float64(size) + float64(y)))
		k += math.Pi / 2
	}
	for j := range 4 {
		cv.line(px[j], py[j], px[(j+1)%4], py[(j+1)%4], color)
	}
}

// schotter draws Georg Nees's Schotter in braille characters: rows of
// squares more and more displaced and rotated downwards.
func schotter(rng *rand.Rand, cols, perRow, perCol int) string {
	width := cols * 2
	padding := 0
	if width > 4 {
		padding = 2
	}
	side := float32(width-padding*2) / float32(perRow)
	height := int(side*float32(perCol)) + padding*2
	cv := newCanvas(width, height, 0)
	for y := range perCol {
		for x := range perRow {
			sx := int(float32(x)*side + side/2 + float32(padding))
			sy := int(float32(y)*side + side/2 + float32(padding))
			var angle float32
			if y > 1 {
				r := func() float32 {
					v := rng.Float32() / float32(perCol) * float32(y)
					return v
				}
				r1, r2, r3 := r(), r(), r()
				if rng.IntN(2) == 1 {
					r1 = -r1
				}
				if rng.IntN(2) == 1 {
					r2 = -r2
				}
				if rng.IntN(2) == 1 {
					r3 = -r3
				}
				angle = r1
				sx += int(r2 * side / 3)
				sy += int(r3 * side / 3)
			}
			cv.square(sx, sy, side, angle, 1)
		}
	}
	var b strings.Builder
	for y := 0; y < cv.h; y += 4 {
		for x := 0; x < cv.w; x += 2 {
			bits := 0
			for i, p := range [8][2]int{{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}, {1, 2}, {0, 3}, {1, 3}} {
				if cv.get(x+p[0], y+p[1]) != 0 {
					bits |= 1 << i
				}
			}
			b.WriteRune(rune(0x2800 + bits))
		}
		if y != cv.h-1 {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// skyscraper draws one building from the bottom of the canvas; windows
// are two pixels wide and one tall.
func (cv *canvas) skyscraper(rng *rand.Rand, xoff, width, height int, windows bool, color byte) {
	start := cv.h - 1
	end := start - height + 1
	for y := start; y >= end; y-- {
		for x := xoff; x < xoff+width; x++ {
			if y == end && (x <= xoff+1 || x >= xoff+width-2) {
				continue // the roof is four pixels narrower
			}
			col := color
			if windows && x > xoff+1 && x < xoff+width-2 && y > end+1 && y < start-1 {
				relx, rely := x-(xoff+1), y-(end+1)
				if (relx/2)%2 == 1 && rely%2 == 1 {
					for col == color {
						col = byte(1 + rng.IntN(2))
					}
					if relx%2 == 1 {
						col = cv.get(x-1, y)
					}
				}
			}
			cv.set(x, y, col)
		}
	}
}

// skyline draws a city in four grays: two rows of background buildings,
// then the foreground ones with windows, rendered as colored spaces.
func skyline(rng *rand.Rand, cols, rows int) string {
	cv := newCanvas(cols, rows, 3)
	for color := byte(2); color >= 1; color-- {
		for off := -10; off < cv.w; {
			off += rng.IntN(8)
			w := 10 + rng.IntN(9)
			var h int
			if color == 2 {
				h = cv.h/2 + rng.IntN(cv.h)/2
			} else {
				h = cv.h/2 + rng.IntN(cv.h)/3
			}
			cv.skyscraper(rng, off, w, h, false, color)
			if color == 2 {
				off += w / 2
			} else {
				off += w + 1
			}
		}
	}
	for off := -10; off < cv.w; {
		off += rng.IntN(8)
		w := 5 + rng.IntN(14)
		if w%4 != 0 {
			w += w % 3
		}
		h := cv.h/3 + rng.IntN(cv.h)/2
		cv.skyscraper(rng, off, w, h, true, 0)
		off += w + 5
	}
	escapes := [4]string{"0;30;40m", "0;90;100m", "0;37;47m", "0;97;107m"}
	var b strings.Builder
	for y := range cv.h {
		for x := range cv.w {
			col := cv.get(x, y)
			e := escapes[0]
			if int(col) < len(escapes) {
				e = escapes[col]
			}
			fmt.Fprintf(&b, "\x1b[%s \x1b[0m", e)
		}
		if y != cv.h-1 {
			b.WriteByte('\n')
		}
	}
	return b.String()
}
