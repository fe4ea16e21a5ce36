// Command rssplot draws a memory-over-time plot as SVG from the samples
// scripts/soak.sh writes (a CSV of seconds and kilobytes, with a header
// line), to stdout: a line of the resident set in MB over minutes, with
// its axes, the peak marked, and the title given.
package main

import (
	"encoding/csv"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
)

// sample is one reading: seconds since the start and the resident set in
// kilobytes.
type sample struct{ sec, kb float64 }

func main() {
	title := flag.String("title", "resident memory", "the plot's title")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: rssplot [-title T] samples.csv > plot.svg")
		os.Exit(254)
	}
	samples, err := read(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "rssplot:", err)
		os.Exit(254)
	}
	if err := plot(os.Stdout, *title, samples); err != nil {
		fmt.Fprintln(os.Stderr, "rssplot:", err)
		os.Exit(1)
	}
}

// read parses the samples file, skipping its header.
func read(path string) ([]sample, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var out []sample
	for i, r := range rows {
		if i == 0 || len(r) != 2 {
			continue
		}
		s, err1 := strconv.ParseFloat(r[0], 64)
		kb, err2 := strconv.ParseFloat(r[1], 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%s:%d: want seconds,kilobytes", path, i+1)
		}
		out = append(out, sample{s, kb})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no samples", path)
	}
	return out, nil
}

// plot writes the SVG.
func plot(w io.Writer, title string, samples []sample) error {
	const width, height, left, bottom, top, right = 720.0, 320.0, 60.0, 40.0, 30.0, 20.0
	maxSec, maxMB, peak := 1.0, 1.0, samples[0]
	for _, s := range samples {
		maxSec = max(maxSec, s.sec)
		maxMB = max(maxMB, s.kb/1024)
		if s.kb > peak.kb {
			peak = s
		}
	}
	maxMB = float64(int(maxMB/50)+1) * 50
	x := func(sec float64) float64 { return left + sec/maxSec*(width-left-right) }
	y := func(mb float64) float64 { return height - bottom - mb/maxMB*(height-bottom-top) }
	fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="12">`+"\n", width, height)
	fmt.Fprintf(w, `<rect width="100%%" height="100%%" fill="white"/><text x="%.0f" y="18" font-size="14">%s</text>`+"\n", left, title)
	for i := 0; i <= 5; i++ {
		mb := maxMB * float64(i) / 5
		fmt.Fprintf(w, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="%.1f" y="%.1f" text-anchor="end">%.0f MB</text>`+"\n",
			left, width-right, y(mb), y(mb), left-6, y(mb)+4, mb)
		sec := maxSec * float64(i) / 5
		fmt.Fprintf(w, `<text x="%.1f" y="%.1f" text-anchor="middle">%.0f min</text>`+"\n", x(sec), height-bottom+18, sec/60)
	}
	fmt.Fprint(w, `<polyline fill="none" stroke="#1f77b4" stroke-width="1.5" points="`)
	for _, s := range samples {
		fmt.Fprintf(w, "%.1f,%.1f ", x(s.sec), y(s.kb/1024))
	}
	fmt.Fprintln(w, `"/>`)
	fmt.Fprintf(w, `<circle cx="%.1f" cy="%.1f" r="3" fill="#d62728"/><text x="%.1f" y="%.1f" fill="#d62728">peak %.0f MB at %.1f min</text>`+"\n",
		x(peak.sec), y(peak.kb/1024), min(x(peak.sec)+6, width-200), y(peak.kb/1024)-6, peak.kb/1024, peak.sec/60)
	_, err := fmt.Fprintln(w, `</svg>`)
	return err
}
