package crash

import (
	"fmt"
	"html"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// plotFamilies are the soak's plots: one a metric family, a line a process
// (a request kind for the latencies).
var plotFamilies = []struct {
	file, title, unit string
	fams              []string
}{
	{"rss.svg", "Resident memory (VmRSS)", "MiB", []string{famRSS}},
	{"goroutines.svg", "Goroutines", "goroutines", []string{famGoroutines}},
	{"open-files.svg", "Open files (/proc/<pid>/fd)", "files", []string{famFiles}},
	{"db-connections.svg", "Postgres connections: open (pg_stat_activity) and held, not idle in a pool (dashed)", "connections", []string{famConns, famHeld}},
	{"latency.svg", "Latency, p50 (dashed) and p99 of each 10 s window", "ms", []string{famP99, famP50}},
}

var plotColours = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#7f7f7f"}

// writePlots writes one SVG a family into dir and returns their names.
func writePlots(dir string, samples []SoakSample, judgedFrom time.Duration) ([]string, error) {
	var names []string
	for _, pf := range plotFamilies {
		svg := plot(pf.title, pf.unit, pf.fams, samples, judgedFrom)
		if err := os.WriteFile(filepath.Join(dir, pf.file), []byte(svg), 0o600); err != nil {
			return names, err
		}
		names = append(names, filepath.Join(dir, pf.file))
	}
	return names, nil
}

// plot draws the series of fams as lines over time, the judged window
// shaded, with labelled axes and a legend.
func plot(title, unit string, fams []string, samples []SoakSample, judgedFrom time.Duration) string {
	const w, h, left, right, top, bottom = 760.0, 340.0, 64.0, 170.0, 34.0, 44.0
	pw, ph := w-left-right, h-top-bottom
	type line struct {
		name   string
		dashed bool
	}
	var lines []line
	for i, fam := range fams {
		for _, k := range seriesKeys(samples) {
			if f, _, _ := strings.Cut(k, "/"); f == fam {
				lines = append(lines, line{name: k, dashed: i > 0})
			}
		}
	}
	xmax, ymax := 1.0, 0.0
	for _, s := range samples {
		xmax = max(xmax, s.At.Seconds())
		for _, l := range lines {
			if v := s.Values[l.name]; !math.IsNaN(v) {
				ymax = max(ymax, v)
			}
		}
	}
	ymax = niceCeil(ymax * 1.1)
	x := func(sec float64) float64 { return left + pw*sec/xmax }
	y := func(v float64) float64 { return top + ph - ph*v/ymax }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n", w, h, w, h)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="#fff"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%.0f" y="20" font-size="14" font-weight="bold">%s</text>`+"\n", left, html.EscapeString(title))
	fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#f2f2f2"/>`+"\n", x(judgedFrom.Seconds()), top, left+pw-x(judgedFrom.Seconds()), ph)
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="#666">judged window</text>`+"\n", x(judgedFrom.Seconds())+4, top+14)
	for i := 0; i <= 5; i++ {
		v := ymax * float64(i) / 5
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n",
			left, left+pw, y(v), y(v), left-6, y(v)+4, shortNum(v))
	}
	step := niceCeil(xmax / 60 / 6) // minutes between ticks
	for m := 0.0; m*60 <= xmax+1e-9; m += step {
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#999"/><text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n",
			x(m*60), x(m*60), top+ph, top+ph+5, x(m*60), top+ph+18, shortNum(m))
	}
	fmt.Fprintf(&b, `<line x1="%.0f" x2="%.0f" y1="%.0f" y2="%.0f" stroke="#333"/><line x1="%.0f" x2="%.0f" y1="%.0f" y2="%.0f" stroke="#333"/>`+"\n",
		left, left+pw, top+ph, top+ph, left, left, top, top+ph)
	fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" text-anchor="middle">minutes from the load's start</text>`+"\n", left+pw/2, h-8)
	fmt.Fprintf(&b, `<text transform="translate(16 %.1f) rotate(-90)" text-anchor="middle">%s</text>`+"\n", top+ph/2, html.EscapeString(unit))
	colourOf := map[string]int{} // a process or a request kind: one colour in every family
	for i, l := range lines {
		_, what, _ := strings.Cut(l.name, "/")
		if _, ok := colourOf[what]; !ok {
			colourOf[what] = len(colourOf)
		}
		colour := plotColours[colourOf[what]%len(plotColours)]
		var pts []string
		for _, s := range samples {
			if v, ok := s.Values[l.name]; ok && !math.IsNaN(v) {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(s.At.Seconds()), y(v)))
			}
		}
		dash := ""
		if l.dashed {
			dash = ` stroke-dasharray="5 4"`
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.8"%s points="%s"/>`+"\n", colour, dash, strings.Join(pts, " "))
		ly := top + 10 + float64(i)*18
		fmt.Fprintf(&b, `<line x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="2.5"%s/><text x="%.0f" y="%.1f">%s</text>`+"\n",
			left+pw+12, left+pw+34, ly, ly, colour, dash, left+pw+40, ly+4, html.EscapeString(l.name))
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func shortNum(v float64) string {
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}
