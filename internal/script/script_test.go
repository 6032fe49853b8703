package script

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

var clock = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

func newRunner(t testing.TB) *Runner {
	r := NewRunner(DefaultLimits, 2)
	t.Cleanup(r.Close)
	return r
}

func compile(t testing.TB, r *Runner, src string) *Program {
	t.Helper()
	p, err := r.Compile(src)
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	return p
}

// run compiles src and calls its map on input.
func run(t testing.TB, r *Runner, src, input string) (Outcome, error) {
	t.Helper()
	return r.Run(context.Background(), compile(t, r, src), "map", []byte(input), clock)
}

func limitOf(err error) string {
	var se *Error
	if errors.As(err, &se) {
		return se.Limit
	}
	return ""
}

func TestRunMapsTheInputToTheReturnedValue(t *testing.T) {
	r := newRunner(t)
	out, err := run(t, r, `function map(post) {
		return {ref: post.body.DocNum, lines: post.body.Lines.map(l => ({sku: l.Item, qty: l.Qty * 2}))};
	}`, `{"body": {"DocNum": "SO-1", "Lines": [{"Item": "A", "Qty": 2}]}}`)
	if err != nil {
		t.Fatal(err)
	}
	if string(out.Output) != `{"ref":"SO-1","lines":[{"sku":"A","qty":4}]}` {
		t.Fatalf("output %s", out.Output)
	}
	if out.Null() || out.Duration <= 0 {
		t.Fatalf("outcome %+v", out)
	}
}

func TestRunAnswersNullForNull(t *testing.T) {
	out, err := run(t, newRunner(t), `function map(post) { return null }`, `{}`)
	if err != nil || !out.Null() {
		t.Fatalf("%s %v", out.Output, err)
	}
}

func TestRunRefusesUndefinedAndAMissingFunction(t *testing.T) {
	r := newRunner(t)
	_, err := run(t, r, `function map(post) { }`, `{}`)
	if err == nil || !strings.Contains(err.Error(), "map returned undefined") {
		t.Fatalf("undefined: %v", err)
	}
	_, err = run(t, r, `function mapp(post) { return {} }`, `{}`)
	if err == nil || !strings.Contains(err.Error(), "defines no function map") {
		t.Fatalf("missing: %v", err)
	}
}

func TestCompileNamesTheLineAndColumnOfASyntaxError(t *testing.T) {
	_, err := newRunner(t).Compile("function map(post) {\n  return {a: 1,,};\n}")
	var se *Error
	if !errors.As(err, &se) || se.Line != 2 || se.Column == 0 || !strings.Contains(se.Message, "SyntaxError") {
		t.Fatalf("%#v", err)
	}
	if !strings.Contains(err.Error(), "(line 2:") {
		t.Fatalf("message %q", err)
	}
}

func TestCompileRefusesASourceOverTheLimit(t *testing.T) {
	r := newRunner(t)
	src := "function map(p) { return p }\n//" + strings.Repeat("x", DefaultLimits.Source)
	if _, err := r.Compile(src); err == nil || !strings.Contains(err.Error(), "over the limit of 65536") {
		t.Fatalf("%v", err)
	}
	if _, err := r.Compile(src[:DefaultLimits.Source]); err != nil {
		t.Fatalf("a source of exactly the limit: %v", err)
	}
}

func TestAThrowNamesItsMessageLineAndColumn(t *testing.T) {
	_, err := run(t, newRunner(t), "function map(post) {\n  const x = 1;\n  return post.body.missing.field;\n}", `{"body": {}}`)
	var se *Error
	if !errors.As(err, &se) || se.Limit != "" || se.Line != 3 || se.Column == 0 || !strings.HasPrefix(se.Message, "TypeError") {
		t.Fatalf("%#v", err)
	}
	_, err = run(t, newRunner(t), "function map(post) {\n  throw new Error('no order number');\n}", `{}`)
	if err == nil || !strings.HasPrefix(err.Error(), "Error: no order number (line 2:") {
		t.Fatalf("%v", err)
	}
}

func TestLimitsEndTheRunWithTheLimitNamed(t *testing.T) {
	cases := []struct{ name, src, limit string }{
		{"endless loop", `function map(p) { for (;;) {} }`, LimitCPU},
		{"endless loop at the top level", `for (;;) {} function map(p) { return p }`, LimitCPU},
		{"allocation bomb", `function map(p) { const a = []; for (;;) a.push(new Float64Array(1 << 17)); }`, LimitMemory},
		{"string doubling", `function map(p) { let s = "x"; for (;;) s += s; }`, LimitMemory},
		{"one huge allocation", `function map(p) { return {n: "x".repeat(1 << 29).length} }`, LimitMemory},
		{"typed array", `function map(p) { return {n: new Uint8Array(1 << 30).length} }`, LimitMemory},
		{"deep recursion", `function map(p) { function f(n) { return f(n + 1) + 1 } return f(0) }`, LimitStack},
		{"huge output", `function map(p) { let s = ""; while (s.length < 2 << 20) s += "xxxxxxxxxxxxxxxx"; return {s} }`, LimitOutput},
	}
	// Each limit is tested on its own: an allocation bomb spends most of
	// the 100 ms of CPU before it reaches 32 MB (QuickJS zeroes what it
	// allocates), so on a loaded machine the CPU limit could end it first.
	// The runs that are not about CPU get a second of it.
	r := newRunner(t)
	roomy := DefaultLimits
	roomy.CPU, roomy.Wall = time.Second, 2*time.Second
	other := NewRunner(roomy, 2)
	t.Cleanup(other.Close)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := r
			if c.limit != LimitCPU {
				r = other
			}
			_, err := run(t, r, c.src, `{}`)
			if limitOf(err) != c.limit || err.Error() != c.limit+" exceeded" {
				t.Fatalf("want %s exceeded, got %v", c.limit, err)
			}
			// The next run is not affected.
			out, err := run(t, r, `function map(p) { return {ok: true} }`, `{}`)
			if err != nil || string(out.Output) != `{"ok":true}` {
				t.Fatalf("the run after: %s %v", out.Output, err)
			}
		})
	}
}

func TestAnOutputJustUnderTheLimitIsAnswered(t *testing.T) {
	// {"s":"…"} is 8 bytes around the string.
	src := fmt.Sprintf(`function map(p) { return {s: "x".repeat(%d)} }`, DefaultLimits.Output-8)
	out, err := run(t, newRunner(t), src, `{}`)
	if err != nil || len(out.Output) != DefaultLimits.Output {
		t.Fatalf("%d %v", len(out.Output), err)
	}
	src = fmt.Sprintf(`function map(p) { return {s: "é".repeat(%d)} }`, DefaultLimits.Output/2)
	if _, err := run(t, newRunner(t), src, `{}`); limitOf(err) != LimitOutput {
		t.Fatalf("two-byte characters over the limit in bytes: %v", err)
	}
}

func TestNothingButTheLanguageIsReachable(t *testing.T) {
	r := newRunner(t)
	for _, expr := range []string{"fetch", "require", "setTimeout", "setInterval", "XMLHttpRequest", "std", "os", "WebAssembly", "process", "WeakRef", "FinalizationRegistry", "__log", "eval"} {
		out, err := run(t, r, `function map(p) { return {t: typeof `+expr+`} }`, `{}`)
		if err != nil || string(out.Output) != `{"t":"undefined"}` {
			t.Fatalf("%s: %s %v", expr, out.Output, err)
		}
	}
	_, err := run(t, r, `function map(p) { return {r: Math.random()} }`, `{}`)
	if err == nil || !strings.Contains(err.Error(), "Math.random is not available") {
		t.Fatalf("Math.random: %v", err)
	}
	if _, err := r.Compile(`import fs from "fs"; function map(p) { return {} }`); err == nil {
		t.Fatal("a module import compiled")
	}
	out, err := run(t, r, `function map(p) { let r = "none"; import("os").then(() => { r = "loaded" }, () => { r = "refused" }); return {r} }`, `{}`)
	if err != nil || string(out.Output) != `{"r":"none"}` {
		t.Fatalf("dynamic import: %s %v", out.Output, err)
	}
}

func TestDateIsFixedAtTheClockGiven(t *testing.T) {
	out, err := run(t, newRunner(t), `function map(p) {
		return {now: Date.now(), iso: new Date().toISOString(), str: Date(), hours: new Date().getHours(),
			offset: new Date().getTimezoneOffset(), other: new Date(0).toISOString(), isDate: new Date() instanceof Date,
			local: new Date(2024, 0, 1).toISOString()};
	}`, `{}`)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(out.Output, &got); err != nil {
		t.Fatal(err)
	}
	if got["now"] != float64(clock.UnixMilli()) || got["iso"] != "2026-03-04T05:06:07.000Z" || got["hours"] != float64(5) ||
		got["offset"] != float64(0) || got["other"] != "1970-01-01T00:00:00.000Z" || got["isDate"] != true ||
		got["local"] != "2024-01-01T00:00:00.000Z" || !strings.HasPrefix(got["str"].(string), "Wed Mar 04 2026 05:06:07 GMT+0000") {
		t.Fatalf("%s", out.Output)
	}
}

func TestTheSameScriptAndInputGiveTheSameResult(t *testing.T) {
	r := newRunner(t)
	src := `globalThis.count = (globalThis.count || 0) + 1;
	Object.prototype.polluted = true;
	function map(p) { return {count, at: new Date().toISOString(), keys: Object.keys({}), sorted: [3, 1, 2].sort(), n: p.n} }`
	first, err := run(t, r, src, `{"n": 1}`)
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		again, err := run(t, r, src, `{"n": 1}`)
		if err != nil || string(again.Output) != string(first.Output) {
			t.Fatalf("%s then %s %v", first.Output, again.Output, err)
		}
	}
	if string(first.Output) != `{"count":1,"at":"2026-03-04T05:06:07.000Z","keys":[],"sorted":[1,2,3],"n":1}` {
		t.Fatalf("%s", first.Output)
	}
}

func TestConsoleLogKeepsFiftyLines(t *testing.T) {
	out, err := run(t, newRunner(t), `function map(p) {
		console.log("order", p.n, {a: 1});
		for (let i = 0; i < 100; i++) console.log(i);
		return {};
	}`, `{"n": 7}`)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Logs) != 51 || out.Logs[0] != `order 7 {"a":1}` || out.Logs[49] != "48" || out.Logs[50] != "… 51 more lines not kept" {
		t.Fatalf("%d lines: %q ... %q", len(out.Logs), out.Logs[0], out.Logs[len(out.Logs)-1])
	}
	// A throw keeps the lines written before it.
	out, err = run(t, newRunner(t), `function map(p) { console.log("before"); throw new Error("x") }`, `{}`)
	if err == nil || len(out.Logs) != 1 || out.Logs[0] != "before" {
		t.Fatalf("%q %v", out.Logs, err)
	}
}

func TestARunWaitsForASlotAsLongAsItsContextAllows(t *testing.T) {
	r := NewRunner(DefaultLimits, 1)
	defer r.Close()
	p := compile(t, r, `function map(p) { for (;;) {} }`)
	go func() { _, _ = r.Run(context.Background(), p, "map", []byte(`{}`), clock) }()
	time.Sleep(20 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	if _, err := r.Run(ctx, p, "map", []byte(`{}`), clock); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%v", err)
	}
}

// rss is the process's resident memory, in bytes.
func rss(t testing.TB) int64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status on this system")
	}
	for _, l := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	t.Skip("no VmRSS")
	return 0
}

// RSSBound is what the process may hold while runs that each pass a limit
// take place at once, over what it held before: per slot, the memory
// limit and the engine's copy on growth (QuickJS copies an array or string
// it grows), and a margin for the Go runtime.
func rssBound(slots int) int64 { return int64(slots)*3*int64(DefaultLimits.Memory) + 64<<20 }

func TestEightRunsPassingLimitsAtOnceKeepTheProcessMemoryBounded(t *testing.T) {
	const slots = 2
	r := NewRunner(DefaultLimits, slots)
	defer r.Close()
	bombs := []string{
		`function map(p) { for (;;) {} }`,
		`function map(p) { const a = []; for (;;) a.push(new Array(1000).fill(1)); }`,
		`function map(p) { function f(n) { return f(n + 1) + 1 } return f(0) }`,
		`function map(p) { let s = "x"; for (;;) s += s; }`,
		`function map(p) { return {n: new Array(5e7).fill(1).length} }`,
		`function map(p) { const o = {}; for (let i = 0; ; i++) o["k" + i] = "v" + i; }`,
		`function map(p) { return {n: "x".repeat(1 << 29).length} }`,
		`function map(p) { const m = new Map(); for (let i = 0; ; i++) m.set(i, [i]); }`,
	}
	progs := make([]*Program, len(bombs))
	for i, b := range bombs {
		progs[i] = compile(t, r, b)
	}
	before := rss(t)
	var peak int64
	var mu sync.Mutex
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			v := rss(t)
			mu.Lock()
			peak = max(peak, v)
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	var wg sync.WaitGroup
	errs := make([]error, len(progs))
	for round := 0; round < 2; round++ {
		for i, p := range progs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = r.Run(context.Background(), p, "map", []byte(`{}`), clock)
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if limitOf(err) == "" {
				t.Fatalf("bomb %d ended with %v, not a limit", i, err)
			}
		}
	}
	close(stop)
	<-sampled
	t.Logf("RSS before %d MB, peak %d MB, bound %d MB over before", before>>20, peak>>20, rssBound(slots)>>20)
	if peak-before > rssBound(slots) {
		t.Fatalf("RSS grew %d MB, over the bound of %d MB", (peak-before)>>20, rssBound(slots)>>20)
	}
	out, err := r.Run(context.Background(), compile(t, r, `function map(p) { return {ok: p.n} }`), "map", []byte(`{"n": 1}`), clock)
	if err != nil || string(out.Output) != `{"ok":1}` {
		t.Fatalf("a normal run after: %s %v", out.Output, err)
	}
}

// oneEngine is a runner of one slot, so that every run after the first
// takes the engine the run before it left, if it left it.
func oneEngine(t *testing.T) *Runner {
	r := NewRunner(DefaultLimits, 1)
	t.Cleanup(r.Close)
	return r
}

func TestAnEngineServesRunAfterRun(t *testing.T) {
	r := oneEngine(t)
	for i := range 20 {
		out, err := run(t, r, `function map(p) { return {n: p.n} }`, fmt.Sprintf(`{"n": %d}`, i))
		if err != nil || string(out.Output) != fmt.Sprintf(`{"n":%d}`, i) {
			t.Fatalf("run %d: %s %v", i, out.Output, err)
		}
	}
	if n := r.engines.Load(); n != 1 {
		t.Fatalf("20 runs made %d engines", n)
	}
}

func TestNothingARunDoesIsSeenByTheNext(t *testing.T) {
	r := oneEngine(t)
	meddler := `
		globalThis.leaked = "secret";
		var declared = "secret";
		try { Object.prototype.polluted = "secret" } catch (e) {}
		try { Array.prototype.map = function () { return ["secret"] } } catch (e) {}
		try { JSON.parse = function () { return "secret" } } catch (e) {}
		try { Date.now = function () { return 0 } } catch (e) {}
		try { Math.max = function () { return "secret" } } catch (e) {}
		try { console.log = function () {} } catch (e) {}
		try { Object.defineProperty(String.prototype, "secret", {value: 1}) } catch (e) {}
		try { Object.getPrototypeOf(function* () {}).secret = 1 } catch (e) {}
		try { Object.getPrototypeOf([][Symbol.iterator]()).secret = 1 } catch (e) {}
		try { Object.getPrototypeOf(Int8Array).prototype.secret = 1 } catch (e) {}
		try { Error.prototype.secret = 1 } catch (e) {}
		try { globalThis.JSON = null } catch (e) {}
		function map(p) { return {} }`
	check := `function map(p) {
		return {
			leaked: typeof leaked, declared: typeof declared, polluted: ({}).polluted, map: [1].map(x => x + 1),
			parse: JSON.parse("[2]"), now: Date.now(), max: Math.max(1, 3), secret: "".secret,
			gen: Object.getPrototypeOf(function* () {}).secret, iter: Object.getPrototypeOf([][Symbol.iterator]()).secret,
			typed: new Int8Array(1).secret, error: new Error("e").secret,
		};
	}`
	want := fmt.Sprintf(`{"leaked":"undefined","declared":"undefined","map":[2],"parse":[2],"now":%d,"max":3}`, clock.UnixMilli())
	for _, meddle := range []string{
		meddler,
		// A global that cannot be deleted, a changed global prototype, a
		// global object closed to additions, a promise job left: the
		// engine is not used again.
		`Object.defineProperty(globalThis, "stuck", {value: "secret"}); function map(p) { return {} }`,
		`Object.setPrototypeOf(globalThis, {leaked: "secret"}); function map(p) { return {} }`,
		`Object.preventExtensions(globalThis); function map(p) { return {} }`,
		`function map(p) { Promise.resolve().then(() => { globalThis.leaked = "secret" }); return {} }`,
	} {
		if _, err := run(t, r, meddle, `{}`); err != nil {
			t.Fatalf("%s: %v", meddle, err)
		}
		out, err := run(t, r, check, `{}`)
		if err != nil || string(out.Output) != want {
			t.Fatalf("after %s:\n%s %v", meddle, out.Output, err)
		}
		out, err = run(t, r, `function map(p) { globalThis.added = 1; return {stuck: typeof stuck, leaked: typeof leaked} }`, `{}`)
		if err != nil || string(out.Output) != `{"stuck":"undefined","leaked":"undefined"}` {
			t.Fatalf("after %s:\n%s %v", meddle, out.Output, err)
		}
	}
}

func TestScriptsCanAssignWhatTheirObjectsInherit(t *testing.T) {
	out, err := run(t, oneEngine(t), `"use strict";
	class ValidationError extends Error {
		constructor(m) { super(m); this.name = "ValidationError"; }
	}
	function map(p) {
		const e = new Error("x");
		e.name = "Custom";
		e.message = "changed";
		const o = {};
		o.toString = () => "mine";
		o.constructor = "field";
		o.hasOwnProperty = 1;
		const copy = {};
		for (const k of Object.keys(p)) copy[k] = p[k];
		return {e: String(e), v: String(new ValidationError("bad")), o: String(o), c: o.constructor, h: o.hasOwnProperty, copy};
	}`, `{"constructor": "c", "toString": "t", "valueOf": "v"}`)
	if err != nil {
		t.Fatal(err)
	}
	if string(out.Output) != `{"e":"Custom: changed","v":"ValidationError: bad","o":"mine","c":"field","h":1,"copy":{"constructor":"c","toString":"t","valueOf":"v"}}` {
		t.Fatalf("%s", out.Output)
	}
	// The built-ins themselves stay as they are.
	out, err = run(t, oneEngine(t), `"use strict"; function map(p) {
		try { Object.prototype.toString = null; return {changed: true} } catch (e) { return {refused: e.name} }
	}`, `{}`)
	if err != nil || string(out.Output) != `{"refused":"TypeError"}` {
		t.Fatalf("%s %v", out.Output, err)
	}
}

func TestAScriptCannotCallTheRunner(t *testing.T) {
	_, err := run(t, oneEngine(t), `function map(p) { return __run(() => () => 1, "map", "{}", 10, 0) }`, `{}`)
	if err == nil || !strings.Contains(err.Error(), "__run is not for scripts") {
		t.Fatalf("%v", err)
	}
}

func TestAnEngineServesOnAfterAThrow(t *testing.T) {
	r := oneEngine(t)
	for i := range 10 {
		_, err := run(t, r, `globalThis.leaked = 1; function map(p) { throw new Error("no") }`, `{}`)
		if err == nil || err.Error() != "Error: no (line 1:57)" {
			t.Fatalf("run %d: %v", i, err)
		}
		out, err := run(t, r, `function map(p) { return {leaked: typeof leaked} }`, `{}`)
		if err != nil || string(out.Output) != `{"leaked":"undefined"}` {
			t.Fatalf("after a throw: %s %v", out.Output, err)
		}
	}
	if n := r.engines.Load(); n != 1 {
		t.Fatalf("20 runs, half of them throwing, made %d engines", n)
	}
	// A run that passes a limit closes its engine.
	if _, err := run(t, r, `function map(p) { for (;;) {} }`, `{}`); limitOf(err) != LimitCPU {
		t.Fatal(err)
	}
	if _, err := run(t, r, `function map(p) { return {} }`, `{}`); err != nil {
		t.Fatal(err)
	}
	if n := r.engines.Load(); n != 2 {
		t.Fatalf("after a limit, %d engines", n)
	}
}
