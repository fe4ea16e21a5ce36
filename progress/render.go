package progress

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// frame is what one drawing of a line is made of: the status, the time
// since the line was made, since the phase began and since Done last
// changed, the status's Done and Count when the phase began, and the most
// cells the bar may take (0: maxBar).
type frame struct {
	s                           Status
	elapsed, inPhase, sinceDone time.Duration
	doneBase, countBase         int64
	barLimit                    int
}

// The bar's widths: at most maxBar cells inside its brackets, and none at
// all when fewer than minBar fit; a note is not drawn in fewer than
// minNote columns.
const (
	maxBar  = 25
	minBar  = 6
	minNote = 4
)

// phaseWidth is the width the phase is right-aligned to, as cargo aligns
// its verbs.
const phaseWidth = 10

// render returns the text of f on a terminal width columns wide, never
// more than width-1 runes (a line that reaches the last column wraps on
// some terminals): the phase, then the bar when the total is known, the
// percent and the amounts, the count with its rate, the time elapsed, the
// time left, and the note. The bar takes at most maxBar cells, and at
// most f.barLimit when it is set. When the line is too wide the bar
// narrows to make room for the whole note, down to minBar cells; a note
// that does not fit even then is cut instead. A terminal too narrow for the rest
// loses the bar, then the note, then the end of the line.
func render(f frame, width int) string {
	line, _ := layout(f, width)
	return line
}

// layout returns render's text and the cells of its bar, 0 when it has
// none.
func layout(f frame, width int) (string, int) {
	avail := width - 1
	head := fmt.Sprintf("%*s", phaseWidth, f.s.Phase)
	rest := strings.Join(f.parts(), "  ")
	line, bw := head, 0
	if f.s.Total > 0 {
		pct := fmt.Sprintf("%3d%%", percent(f.s.Done, f.s.Total))
		room := avail - runes(head) - runes(pct) - runes(rest) - 6 // " [" + "] " + "  "
		bw = min(maxBar, room)
		if f.barLimit > 0 {
			bw = min(bw, f.barLimit)
		}
		if fit := room - 2 - runes(f.s.Note); f.s.Note != "" && fit >= minBar {
			bw = min(bw, fit)
		}
		if bw < minBar {
			bw = 0
		} else {
			line += " [" + bar(float64(f.s.Done)/float64(f.s.Total), bw) + "]"
		}
		line += " " + pct
	}
	line += "  " + rest
	if note := f.s.Note; note != "" {
		if room := avail - runes(line) - 2; room >= minNote {
			line += "  " + cut(note, room)
		}
	}
	return cut(line, avail), bw
}

// parts returns the pieces of f's line after its bar and percent, in
// order; the last, the time elapsed, is always there.
func (f frame) parts() []string {
	s := f.s
	var parts []string
	switch {
	case s.Total > 0:
		parts = append(parts, amount(s.Done, s.Unit)+"/"+amount(s.Total, s.Unit)+unitName(s.Unit))
	case s.Done > 0:
		parts = append(parts, amount(s.Done, s.Unit)+unitName(s.Unit))
	}
	switch rate := f.rate(s.Count, f.countBase); {
	case s.CountUnit != "" && rate > 0:
		parts = append(parts, fmt.Sprintf("%s %s (%s/s)", Thousands(s.Count), s.CountUnit, Thousands(int64(rate))))
	case s.CountUnit != "":
		parts = append(parts, Thousands(s.Count)+" "+s.CountUnit)
	case s.Unit == Bytes && f.rate(s.Done, f.doneBase) > 0:
		parts = append(parts, Size(int64(f.rate(s.Done, f.doneBase)))+"/s")
	}
	parts = append(parts, Clock(f.elapsed)+" elapsed")
	if left, ok := f.left(); ok {
		parts = append(parts, "ETA "+Clock(left))
	}
	return parts
}

// rate returns how many of a count were handled per second since the
// phase began (from base); 0 when none were or no time passed.
func (f frame) rate(n, base int64) float64 {
	if n <= base || f.inPhase <= 0 {
		return 0
	}
	return float64(n-base) / f.inPhase.Seconds()
}

// left estimates the time left in the phase, rounded up to the second,
// from the time Done took to grow since the phase began: the time each
// unit took, for each unit left, less the time since Done last grew (a
// count of runs counts down while a run goes on), but never less than the
// time of the units left after the current one. ok is false when there is
// no total, no unit done yet, or no time left by that estimate.
func (f frame) left() (time.Duration, bool) {
	s := f.s
	took := f.inPhase - f.sinceDone
	if s.Total <= 0 || s.Done >= s.Total || s.Done <= f.doneBase || took <= 0 {
		return 0, false
	}
	per := float64(took) / float64(s.Done-f.doneBase)
	units := float64(s.Total - s.Done)
	left := max(time.Duration(per*units)-f.sinceDone, time.Duration(per*(units-1)))
	if left <= 0 {
		return 0, false
	}
	return (left + time.Second - 1).Truncate(time.Second), true // up: never 0:00 before the end
}

// percent returns done of total in whole percent, in [0, 100].
func percent(done, total int64) int {
	return int(100 * clamp01(float64(done)/float64(total)))
}

func clamp01(x float64) float64 { return max(0, min(1, x)) }

// bar returns a bar n cells wide, frac of it filled, as cargo draws it:
// "=====>    ".
func bar(frac float64, n int) string {
	filled := int(clamp01(frac) * float64(n))
	if filled >= n {
		return strings.Repeat("=", n)
	}
	if filled == 0 {
		return strings.Repeat(" ", n)
	}
	return strings.Repeat("=", filled-1) + ">" + strings.Repeat(" ", n-filled)
}

// amount returns n in unit u, without the unit's name.
func amount(n int64, u Unit) string {
	switch u {
	case Bytes:
		return Size(n)
	case Time:
		return seconds(time.Duration(n))
	}
	return Thousands(n)
}

// unitName returns what follows the amounts in unit u: " runs" for a
// count of runs; nothing for Bytes and Time, whose amounts say their unit.
func unitName(u Unit) string {
	switch u {
	case Bytes, Time, "":
		return ""
	}
	return " " + string(u)
}

// seconds returns d as "12.3s" below a minute, as a Clock above.
func seconds(d time.Duration) string {
	if d < time.Minute {
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
	}
	return Clock(d)
}

// Thousands returns n in decimal with a comma between each group of three
// digits: 1234567 is "1,234,567".
func Thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	sign := ""
	if n < 0 {
		sign, s = "-", s[1:]
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return sign + b.String()
}

// Size returns n bytes in binary units with one decimal, as pv does:
// "512 B", "1.5 KiB", "273.9 MiB", "2.0 GiB".
func Size(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	v, i := float64(n)/unit, 0
	for v >= unit && i < 3 {
		v /= unit
		i++
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " " + []string{"KiB", "MiB", "GiB", "TiB"}[i]
}

// Clock returns d, rounded down to the second, as a clock: "0:07", "12:34",
// "1:02:03".
func Clock(d time.Duration) string {
	s := int64(max(0, d) / time.Second)
	h, m, sec := s/3600, s/60%60, s%60
	if h > 0 {
		return fmt.Sprintf("%d:%02d:%02d", h, m, sec)
	}
	return fmt.Sprintf("%d:%02d", m, sec)
}

func runes(s string) int { return utf8.RuneCountInString(s) }

// cut returns s cut to at most n runes, its end replaced by "…" when it
// was cut.
func cut(s string, n int) string {
	if runes(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
