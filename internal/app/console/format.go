package console

import (
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"net/url"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/commerce-integration/commerce/domain"
)

// titles are the pages' headings.
var titles = map[string]string{
	"signin":               "Sign in",
	"endpoints":            "Inbound endpoints",
	"endpoint_created":     "Endpoint created",
	"receipts":             "Receipts",
	"bulk_new":             "Bulk replay",
	"bulk":                 "Bulk replay",
	"bulk_list":            "Bulk replays and resends",
	"resend_new":           "Bulk resend",
	"resend":               "Bulk resend",
	"webhooks":             "Webhook subscriptions",
	"subscription_created": "Subscription created",
	"deliveries":           "Webhook deliveries",
	"audit":                "Audit log",
	"error":                "Error",
	"confirm":              "Confirm",
	"mapping":              "Mapping",
	"sessions":             "Sessions",
	"sso":                  "Identity provider",
}

// parsePages parses each page's template with the layout.
func parsePages() map[string]*template.Template {
	pages := map[string]*template.Template{}
	for _, name := range []string{"signin", "endpoints", "endpoint_created", "receipts", "receipt", "dryrun", "bulk_new", "bulk",
		"webhooks", "subscription_created", "deliveries", "delivery", "event", "subscription", "audit", "error", "confirm", "mapping", "sessions", "sso",
		"bulk_list", "resend_new", "resend"} {
		pages[name] = template.Must(template.New(name).Funcs(funcs).ParseFS(templateFiles, "templates/layout.html", "templates/partials.html", "templates/"+name+".html"))
	}
	return pages
}

var funcs = template.FuncMap{
	"ts":        timeElement,
	"money":     money,
	"value":     changeValue,
	"pretty":    pretty,
	"countKeys": countKeys,
	"join":      strings.Join,
	"sub":       func(a, b int) int { return a - b },
	"percent": func(done, total int) int {
		if total == 0 {
			return 100
		}
		return done * 100 / total
	},
	"deref": func(p any) any {
		switch v := p.(type) {
		case *string:
			if v != nil {
				return *v
			}
		case *int:
			if v != nil {
				return *v
			}
		}
		return ""
	},
	"str":       func(v any) string { return fmt.Sprint(v) },
	"ms":        duration,
	"took":      took,
	"shortHash": shortHash,
	"target":    target,
	"clip":      clip,
	"postName":  postName,
	"hasPrefix": strings.HasPrefix,
	"dict": func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[fmt.Sprint(kv[i])] = kv[i+1]
		}
		return m
	},
}

// duration shows a count of milliseconds as a person reads a duration:
// "340 ms", "2.4 s", "1 min 55 s", "2 h 5 min".
func duration(v any) string {
	var ms int64
	switch x := v.(type) {
	case int:
		ms = int64(x)
	case *int:
		if x == nil {
			return ""
		}
		ms = int64(*x)
	case int64:
		ms = x
	default:
		return fmt.Sprint(v)
	}
	d := time.Duration(ms) * time.Millisecond
	switch {
	case d < time.Second:
		return fmt.Sprintf("%d ms", ms)
	case d < 10*time.Second:
		return fmt.Sprintf("%.1f s", d.Seconds())
	case d < time.Minute:
		return fmt.Sprintf("%d s", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%d min %d s", int(d.Minutes()), int(d.Seconds())%60)
	default:
		return fmt.Sprintf("%d h %d min", int(d.Hours()), int(d.Minutes())%60)
	}
}

// shortHash is the first 12 hex digits of a SHA-256, as the versions list
// shows it.
func shortHash(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// took shows how long a mapping's run took: under a millisecond to the
// hundredth of one.
func took(d time.Duration) string {
	if d < time.Millisecond {
		return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
	}
	return duration(d.Milliseconds())
}

// timeElement shows an instant as a <time> element: its text is UTC, and
// the console's script rewrites it in the viewer's time zone.
func timeElement(v any) template.HTML {
	var t time.Time
	switch x := v.(type) {
	case domain.Timestamp:
		t = x.Time
	case *domain.Timestamp:
		if x == nil {
			return ""
		}
		t = x.Time
	case time.Time:
		t = x
	case *time.Time:
		if x == nil {
			return ""
		}
		t = *x
	default:
		return ""
	}
	t = t.UTC()
	return template.HTML(fmt.Sprintf(`<time datetime="%s">%s</time>`, t.Format(time.RFC3339Nano),
		template.HTMLEscapeString(t.Format("2006-01-02 15:04:05 UTC"))))
}

// money formats an amount in minor units of an ISO 4217 currency:
// 123456 GBP is "GBP 1,234.56".
func money(minor any, currency string) string {
	var n int64
	switch v := minor.(type) {
	case int64:
		n = v
	case int:
		n = int64(v)
	case float64:
		if v != math.Trunc(v) || math.Abs(v) > 1e15 {
			return fmt.Sprint(v)
		}
		n = int64(v)
	case json.Number:
		i, err := v.Int64()
		if err != nil {
			return v.String()
		}
		n = i
	default:
		return fmt.Sprint(v)
	}
	digits := minorDigits(currency)
	sign := ""
	if n < 0 {
		sign, n = "-", -n
	}
	unit := int64(math.Pow10(digits))
	major := groupThousands(n / unit)
	if digits == 0 {
		return fmt.Sprintf("%s %s%s", currency, sign, major)
	}
	return fmt.Sprintf("%s %s%s.%0*d", currency, sign, major, digits, n%unit)
}

// minorDigits is how many minor-unit digits a currency has (ISO 4217).
func minorDigits(currency string) int {
	switch currency {
	case "JPY", "KRW", "VND", "CLP", "ISK", "UGX", "XAF", "XOF", "PYG", "RWF":
		return 0
	case "BHD", "KWD", "OMR", "JOD", "TND", "IQD", "LYD":
		return 3
	}
	return 2
}

func groupThousands(n int64) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// changeValue shows a change's value: an amount (a field named *_minor)
// as money in the organisation's currency, JSON otherwise.
func changeValue(field string, v any, currency string) string {
	// Values come typed (pointers among them) or decoded: see them as JSON.
	if b, err := json.Marshal(v); err == nil {
		v = nil
		_ = json.Unmarshal(b, &v)
	}
	if v == nil {
		return "—"
	}
	if strings.HasSuffix(field, "_minor") {
		return money(v, currency)
	}
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// amount is a money field of a body: where it is and what it says.
type amount struct{ Path, Value string }

// amounts finds the amounts (fields named *_minor) in a posted body and
// formats them in the organisation's currency (or the currency beside
// them), at most 50.
func amounts(body any, currency string) []amount {
	var out []amount
	var walk func(path string, v any, cur string)
	walk = func(path string, v any, cur string) {
		if len(out) >= 50 {
			return
		}
		switch x := v.(type) {
		case map[string]any:
			if c, ok := x["currency"].(string); ok && len(c) == 3 {
				cur = c
			}
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				p := k
				if path != "" {
					p = path + "." + k
				}
				if n, ok := x[k].(float64); ok && strings.HasSuffix(k, "_minor") {
					out = append(out, amount{p, money(n, cur)})
					continue
				}
				walk(p, x[k], cur)
			}
		case []any:
			for i, e := range x {
				walk(fmt.Sprintf("%s[%d]", path, i), e, cur)
			}
		}
	}
	walk("", body, currency)
	return out
}

// pretty indents a JSON value; nil is "".
func pretty(v any) string {
	if v == nil {
		return ""
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// countKeys orders an endpoint's counts by outcome, in the outcomes' order.
func countKeys(counts map[string]int) []string {
	var out []string
	for _, o := range domain.Outcomes {
		if counts[string(o)] > 0 {
			out = append(out, string(o))
		}
	}
	return out
}

func sortHeaders(h []header) {
	sort.Slice(h, func(i, j int) bool { return strings.ToLower(h[i].Name) < strings.ToLower(h[j].Name) })
}

// target is a subscription's URL as the console shows it: scheme, host and
// path, with any query, fragment or user information, which can carry the
// receiver's credentials (?token=…), replaced by "…".
func target(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "(the URL is not valid)"
	}
	shown := u.Scheme + "://" + u.Host + u.EscapedPath()
	if u.User != nil {
		shown = u.Scheme + "://…@" + u.Host + u.EscapedPath()
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		shown += "?…"
	}
	return shown
}

// postName names an inbound post as a person knows it: its action and its
// first business reference ("erp_order_status post SO-2026-0204"), cut to
// a line.
func postName(action domain.Action, refs []string) string {
	name := string(action) + " post"
	if len(refs) > 0 {
		name += " " + refs[0]
	}
	return clip(100, name)
}

// clip cuts s to at most n characters, the last of them "…".
func clip(n int, s string) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
