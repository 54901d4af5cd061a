package node

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

func registerLolwutCommands(t *commandTable) {
	t.add(&command{name: "lolwut", arity: -1, flags: flagReadOnly | flagFast, fn: cmdLolwut, group: "server", since: "5.0.0"})
}

// LOLWUT [VERSION version] [args ...]: as Redis 7.0, the art of version 5
// (Schotter) or 6 (a skyline) when asked for, and for this version just
// the version line.
func cmdLolwut(c *Client, args [][]byte) {
	ver := Version
	rest := args[1:]
	if len(args) >= 3 && eqFold(args[1], "version") {
		n, ok := parseInt(args[2])
		if !ok {
			c.addError(errNotInt)
			return
		}
		ver = strconv.FormatUint(uint64(uint32(n)), 10) + ".0.0"
		rest = args[3:]
	}
	v5 := (ver[0] == '5' && ver[1] == '.' && ver[2] != '9') || (ver[0] == '4' && ver[1] == '.' && ver[2] == '9')
	v6 := (ver[0] == '6' && ver[1] == '.' && ver[2] != '9') || (ver[0] == '5' && ver[1] == '.' && ver[2] == '9')
	parsed := 0 // the arguments the art takes: cols, squares per row, per column
	if v5 {
		parsed = 3
	} else if v6 {
		parsed = 2 // cols, rows
	}
	nums := make([]int64, min(len(rest), parsed))
	for i := range nums {
		n, ok := parseInt(rest[i])
		if !ok {
			c.addError(errNotInt)
			return
		}
		nums[i] = n
	}
	arg := func(i int, def int64, lo, hi int64) int {
		v := def
		if i < len(nums) {
			v = nums[i]
		}
		return int(min(max(v, lo), hi))
	}
	switch {
	case v5:
		art := schotter(arg(0, 66, 1, 1000), arg(1, 8, 1, 200), arg(2, 12, 1, 200))
		c.addVerbatim(art + "\nGeorg Nees - schotter, plotter on paper, 1968. Redis ver. " + Version + "\n")
	case v6:
		art := skyline(arg(0, 80, 1, 1000), arg(1, 20, 1, 1000))
		c.addVerbatim(art + "\nDedicated to the 8 bit game developers of past and present.\nOriginal 8 bit image from Plaguemon by hikikomori. Redis ver. " + Version + "\n")
	default:
		c.addVerbatim("Redis ver. " + Version + "\n")
	}
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
func schotter(cols, perRow, perCol int) string {
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
					v := rand.Float32() / float32(perCol) * float32(y)
					return v
				}
				r1, r2, r3 := r(), r(), r()
				if rand.IntN(2) == 1 {
					r1 = -r1
				}
				if rand.IntN(2) == 1 {
					r2 = -r2
				}
				if rand.IntN(2) == 1 {
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
func (cv *canvas) skyscraper(xoff, width, height int, windows bool, color byte) {
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
						col = byte(1 + rand.IntN(2))
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
func skyline(cols, rows int) string {
	cv := newCanvas(cols, rows, 3)
	for color := byte(2); color >= 1; color-- {
		for off := -10; off < cv.w; {
			off += rand.IntN(8)
			w := 10 + rand.IntN(9)
			var h int
			if color == 2 {
				h = cv.h/2 + rand.IntN(cv.h)/2
			} else {
				h = cv.h/2 + rand.IntN(cv.h)/3
			}
			cv.skyscraper(off, w, h, false, color)
			if color == 2 {
				off += w / 2
			} else {
				off += w + 1
			}
		}
	}
	for off := -10; off < cv.w; {
		off += rand.IntN(8)
		w := 5 + rand.IntN(14)
		if w%4 != 0 {
			w += w % 3
		}
		h := cv.h/3 + rand.IntN(cv.h)/2
		cv.skyscraper(off, w, h, true, 0)
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
