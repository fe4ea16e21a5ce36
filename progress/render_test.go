package progress

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// TestRender pins the text of the line for each kind of status, at the
// widths a terminal may have.
func TestRender(t *testing.T) {
	tests := []struct {
		name  string
		f     frame
		width int
		want  string
	}{
		{"a phase alone",
			frame{s: Status{Phase: "starting servers"}, elapsed: 1500 * time.Millisecond, inPhase: time.Second},
			120, "starting servers  0:01 elapsed"},
		{"a short phase is right-aligned",
			frame{s: Status{Phase: "checking"}, elapsed: 61 * time.Second},
			120, "  checking  1:01 elapsed"},
		{"bytes of a known total, ops with their rate, time left",
			frame{s: Status{Phase: "reading", Done: 100 << 20, Total: 400 << 20, Unit: Bytes, Count: 1_000_000, CountUnit: "ops"}, elapsed: 2 * time.Second, inPhase: 2 * time.Second},
			120, "   reading [=====>                   ]  25%  100.0 MiB/400.0 MiB  1,000,000 ops (500,000/s)  0:02 elapsed  ETA 0:06"},
		{"the rate and the time left are measured from the start of the phase",
			frame{s: Status{Phase: "gate", Done: 3, Total: 10, Unit: "runs"}, elapsed: 5 * time.Minute, inPhase: 90 * time.Second, doneBase: 0},
			120, "      gate [======>                  ]  30%  3/10 runs  5:00 elapsed  ETA 3:30"},
		{"the time left counts down while a unit goes on",
			frame{s: Status{Phase: "gate", Done: 2, Total: 5, Unit: "runs"}, elapsed: 100 * time.Second, inPhase: 100 * time.Second, sinceDone: 20 * time.Second},
			120, "      gate [=========>               ]  40%  2/5 runs  1:40 elapsed  ETA 1:40"},
		{"a unit that takes longer than the others leaves the time of the units after it",
			frame{s: Status{Phase: "gate", Done: 2, Total: 5, Unit: "runs"}, elapsed: 100 * time.Second, inPhase: 100 * time.Second, sinceDone: 70 * time.Second},
			120, "      gate [=========>               ]  40%  2/5 runs  1:40 elapsed  ETA 0:30"},
		{"no time left shown when the last unit takes longer than the others",
			frame{s: Status{Phase: "gate", Done: 4, Total: 5, Unit: "runs"}, elapsed: 100 * time.Second, inPhase: 100 * time.Second, sinceDone: 60 * time.Second},
			120, "      gate [===================>     ]  80%  4/5 runs  1:40 elapsed"},
		{"no rate and no time left before the first unit is done",
			frame{s: Status{Phase: "gate", Done: 0, Total: 10, Unit: "runs", Note: "redis-single-baseline seed 1: starting servers"}, elapsed: time.Second, inPhase: time.Second},
			120, "      gate [                         ]   0%  0/10 runs  0:01 elapsed  redis-single-baseline seed 1: starting servers"},
		{"a run's time, its ops and its faults",
			frame{s: Status{Phase: "running", Done: int64(12300 * time.Millisecond), Total: int64(31 * time.Second), Unit: Time, Count: 4521, CountUnit: "ops", Note: "faults: kill n1"}, elapsed: 14 * time.Second, inPhase: 12300 * time.Millisecond},
			120, "   running [========>                ]  39%  12.3s/31.0s  4,521 ops (367/s)  0:14 elapsed  ETA 0:19  faults: kill n1"},
		{"the time left is rounded up: never 0:00 before the end",
			frame{s: Status{Phase: "running", Done: int64(9500 * time.Millisecond), Total: int64(10 * time.Second), Unit: Time}, elapsed: 10 * time.Second, inPhase: 9500 * time.Millisecond},
			120, "   running [======================>  ]  95%  9.5s/10.0s  0:10 elapsed  ETA 0:01"},
		{"a count that does not grow has no rate",
			frame{s: Status{Phase: "deciding", Count: 3_000_000, CountUnit: "ops"}, elapsed: 9 * time.Second, inPhase: 4 * time.Second, countBase: 3_000_000},
			120, "  deciding  3,000,000 ops  0:09 elapsed"},
		{"bytes of an unknown total, with their rate",
			frame{s: Status{Phase: "reading", Done: 3 << 20, Unit: Bytes}, elapsed: 2 * time.Second, inPhase: 2 * time.Second},
			120, "   reading  3.0 MiB  1.5 MiB/s  0:02 elapsed"},
		{"done: a full bar and no time left",
			frame{s: Status{Phase: "gate", Done: 4, Total: 4, Unit: "runs"}, elapsed: 40 * time.Second, inPhase: 40 * time.Second},
			120, "      gate [=========================] 100%  4/4 runs  0:40 elapsed"},
		{"a narrow terminal narrows the bar and drops a note that does not fit",
			frame{s: Status{Phase: "gate", Done: 1, Total: 2, Unit: "runs", Note: "redis-single-baseline seed 2: running"}, elapsed: 10 * time.Second, inPhase: 10 * time.Second},
			60, "      gate [==>    ]  50%  1/2 runs  0:10 elapsed  ETA 0:10"},
		{"a note that would not fit even beside the least bar is cut at the last column but one, the bar kept",
			frame{s: Status{Phase: "gate", Done: 1, Total: 2, Unit: "runs", Note: "1 invalid · redis-single-gc-pause seed 2: running 3.1s/7.0s, 1,234 ops"}, elapsed: 10 * time.Second, inPhase: 10 * time.Second},
			100, "      gate [===========>             ]  50%  1/2 runs  0:10 elapsed  ETA 0:10  1 invalid · redis-s…"},
		{"the bar narrows to make room for the note",
			frame{s: Status{Phase: "gate", Done: 1, Total: 2, Unit: "runs", Note: "redis-single-baseline seed 2: starting servers"}, elapsed: 10 * time.Second, inPhase: 10 * time.Second},
			120, "      gate [========>          ]  50%  1/2 runs  0:10 elapsed  ETA 0:10  redis-single-baseline seed 2: starting servers"},
		{"a bar limited to fewer cells than fit",
			frame{s: Status{Phase: "gate", Done: 1, Total: 2, Unit: "runs"}, elapsed: 10 * time.Second, inPhase: 10 * time.Second, barLimit: 8},
			120, "      gate [===>    ]  50%  1/2 runs  0:10 elapsed  ETA 0:10"},
		{"a terminal too narrow for the bar drops it",
			frame{s: Status{Phase: "gate", Done: 1, Total: 2, Unit: "runs", Note: "redis-single-baseline seed 2"}, elapsed: 10 * time.Second, inPhase: 10 * time.Second},
			50, "      gate  50%  1/2 runs  0:10 elapsed  ETA 0:10"},
		{"a terminal too narrow for the whole line cuts it",
			frame{s: Status{Phase: "reading", Done: 1 << 20, Total: 4 << 20, Unit: Bytes, Count: 10, CountUnit: "ops"}, elapsed: time.Second, inPhase: time.Second},
			30, "   reading  25%  1.0 MiB/4.0…"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := render(tc.f, tc.width)
			if got != tc.want {
				t.Fatalf("render:\n got %q\nwant %q", got, tc.want)
			}
			if n := utf8.RuneCountInString(got); n >= tc.width {
				t.Fatalf("%d runes on a terminal %d wide: the line would reach its last column", n, tc.width)
			}
		})
	}
}

// TestFormats pins the numbers' formats: thousands separators, sizes,
// clocks and the bar.
func TestFormats(t *testing.T) {
	tests := []struct {
		name, got, want string
	}{
		{"a small number", Thousands(999), "999"},
		{"a thousand", Thousands(1000), "1,000"},
		{"millions", Thousands(3_000_000), "3,000,000"},
		{"a negative number", Thousands(-1234567), "-1,234,567"},
		{"zero", Thousands(0), "0"},
		{"bytes", Size(512), "512 B"},
		{"kibibytes", Size(1536), "1.5 KiB"},
		{"mebibytes", Size(273_900_000), "261.2 MiB"},
		{"gibibytes", Size(2 << 30), "2.0 GiB"},
		{"seconds", Clock(7900 * time.Millisecond), "0:07"},
		{"minutes", Clock(12*time.Minute + 34*time.Second), "12:34"},
		{"hours", Clock(time.Hour + 2*time.Minute + 3*time.Second), "1:02:03"},
		{"a negative time is none", Clock(-time.Second), "0:00"},
		{"an empty bar", bar(0, 5), "     "},
		{"a bar under way", bar(0.5, 10), "====>     "},
		{"a full bar", bar(1, 5), "====="},
		{"a bar past its end", bar(1.5, 5), "====="},
		{"a run's time below a minute", seconds(12300 * time.Millisecond), "12.3s"},
		{"a run's time above a minute", seconds(90 * time.Second), "1:30"},
		{"a text that fits", cut("abc", 3), "abc"},
		{"a text cut", cut("abcdef", 4), "abc…"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Fatalf("got %q, want %q", tc.got, tc.want)
			}
		})
	}
}

// TestRenderNeverReachesTheLastColumn renders a status with every part
// at every width from 1 to 200: the line always ends before the last
// column.
func TestRenderNeverReachesTheLastColumn(t *testing.T) {
	f := frame{s: Status{Phase: "running", Done: 5, Total: 10, Unit: Time, Count: 1234, CountUnit: "ops", Note: strings.Repeat("fault ", 30)}, elapsed: time.Minute, inPhase: time.Minute}
	for w := 1; w <= 200; w++ {
		if n := utf8.RuneCountInString(render(f, w)); n >= w && n > 0 {
			t.Fatalf("width %d: %d runes", w, n)
		}
	}
}
