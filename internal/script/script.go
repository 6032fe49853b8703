// Package script runs the JavaScript of mappings and transformations: a
// function of one JSON input that answers one JSON value, on an engine that
// can do nothing else. An engine (modernc.org/quickjs, QuickJS in pure Go)
// holds the language's built-ins, frozen, JSON, Math without Math.random,
// a Date whose clock is fixed by the caller, and console.log; no network,
// files, timers, modules or eval. It serves one run after another: a
// script's top level runs in a function of its own and the globals a run
// adds are deleted after it, so nothing outlives a run, and the same
// script and input always give the same result; an engine a run could
// have changed is closed instead (prelude.js).
//
// Every run is held to Limits: CPU time (measured on the run's own thread),
// memory (QuickJS's allocator refuses past the cap), the size of its
// output, and the depth of its stack. A run that passes one ends with an
// *Error naming it, and the next run is not affected. At most Slots runs
// take place at once, so the memory all runs can hold is bounded whatever
// the number of callers (docs/decisions.md#mappings-engine).
package script

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"modernc.org/libc"
	"modernc.org/quickjs"
)

// Limits bound one run.
type Limits struct {
	// Source is the largest script, in bytes.
	Source int
	// CPU is the CPU time one run may take.
	CPU time.Duration
	// Wall ends a run that has not finished in this much real time, CPU
	// used or not (a run starved of CPU on a crowded machine).
	Wall time.Duration
	// Memory is the most the engine of one run may allocate, in bytes.
	Memory int
	// Output is the largest result, in bytes of its JSON.
	Output int
	// Logs is the most console.log lines a run keeps; LogLine the longest.
	Logs, LogLine int
}

// DefaultLimits are the limits of mappings and transformations.
var DefaultLimits = Limits{
	Source:  64 << 10,
	CPU:     100 * time.Millisecond,
	Wall:    time.Second,
	Memory:  32 << 20,
	Output:  1 << 20,
	Logs:    50,
	LogLine: 1 << 10,
}

// The limits an *Error may name.
const (
	LimitCPU    = "cpu time"
	LimitMemory = "memory"
	LimitOutput = "output size"
	LimitStack  = "stack depth"
)

// Error is why a script did not compile, or why its run ended without a
// result: a limit it passed, or what it threw.
type Error struct {
	// Limit is the limit the run passed; empty for a script that threw or
	// does not compile.
	Limit string
	// Message is what was thrown ("TypeError: x is undefined") or why the
	// script does not compile.
	Message string
	// Line and Column locate it in the script (1-based); zero when unknown.
	Line, Column int
}

func (e *Error) Error() string {
	if e.Limit != "" {
		return e.Limit + " exceeded"
	}
	if e.Line > 0 {
		return fmt.Sprintf("%s (line %d:%d)", e.Message, e.Line, e.Column)
	}
	return e.Message
}

// Program is a compiled script.
type Program struct {
	// Source is the script as written; SHA256 its hex digest.
	Source string
	SHA256 string

	mu sync.Mutex
	// wrapped is the script's code inside a function that answers the
	// function it names, compiled once for each name it is asked for.
	wrapped map[string][]byte
}

// Outcome is what a run answered.
type Outcome struct {
	// Output is the JSON of the returned value ("null" for null).
	Output []byte
	// Logs are the lines console.log wrote, at most Limits.Logs.
	Logs []string
	// Duration is the run's real time.
	Duration time.Duration
}

// Null says whether the function returned null.
func (o Outcome) Null() bool { return string(o.Output) == "null" }

// Runner runs programs within its limits.
type Runner struct {
	limits Limits
	slots  chan struct{}
	// idle holds engines ready for a run: the prelude installed and, for
	// one that has run before, every global its runs added deleted.
	idle chan *engine
	// engines counts the engines made.
	engines atomic.Int64
}

// engineRuns is how many runs an engine serves before it is closed and
// a new one takes its place, which also returns whatever memory its runs
// left for its garbage collector.
const engineRuns = 1000

// engine is a QuickJS engine with the prelude installed. It serves runs
// one at a time, as long as each ends with a result and leaves it clean;
// any other run closes it.
type engine struct {
	vm   *quickjs.VM
	logs []string
	// dropped counts lines past the limit.
	dropped int
	limits  *Limits
	// runs counts the runs it has served.
	runs int
}

// NewRunner makes a runner of at most slots runs at once (at least one).
func NewRunner(l Limits, slots int) *Runner {
	slots = max(slots, 1)
	return &Runner{limits: l, slots: make(chan struct{}, slots), idle: make(chan *engine, slots)}
}

// DefaultSlots is the number of runs at once a process allows: one per
// processor, and at least two.
func DefaultSlots() int { return max(runtime.GOMAXPROCS(0), 2) }

// Close releases the runner's idle engines.
func (r *Runner) Close() {
	for {
		select {
		case e := <-r.idle:
			_ = e.vm.Close()
		default:
			return
		}
	}
}

// Limits are the runner's limits.
func (r *Runner) Limits() Limits { return r.limits }

//go:embed prelude.js
var preludeSource string

var (
	preludeOnce sync.Once
	prelude     []byte
	preludeErr  error
)

// Compile compiles source, which must be at most Limits.Source bytes and
// valid JavaScript; an *Error says where it is not.
func (r *Runner) Compile(source string) (*Program, error) {
	if len(source) > r.limits.Source {
		return nil, &Error{Message: fmt.Sprintf("the script is %d bytes, over the limit of %d", len(source), r.limits.Source)}
	}
	if !utf8.ValidString(source) {
		return nil, &Error{Message: "the script is not valid UTF-8"}
	}
	vm, err := quickjs.NewVM()
	if err != nil {
		return nil, err
	}
	defer vm.Close()
	vm.SetMemoryLimit(uintptr(r.limits.Memory))
	if _, err := vm.Compile(source, quickjs.EvalGlobal); err != nil {
		var qe *quickjs.Error
		if errors.As(err, &qe) {
			return nil, &Error{Message: qe.Name + ": " + qe.Message, Line: qe.LineNumber, Column: qe.ColumnNumber}
		}
		return nil, err
	}
	sum := sha256.Sum256([]byte(source))
	return &Program{Source: source, SHA256: hex.EncodeToString(sum[:])}, nil
}

// identifier is a function name a program can be asked for.
var identifier = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]*$`)

// code is the program's code inside a function that runs the script's own
// top level in a scope of its own, so that nothing it declares outlives
// the run, and answers its function fn (undefined when it has none). The
// script compiled on its own (Compile), so it is the whole body of that
// function: a script cannot close the function early. The body starts on
// the second line (see wrappedLines).
func (p *Program) code(vm *quickjs.VM, fn string) ([]byte, error) {
	if !identifier.MatchString(fn) {
		return nil, fmt.Errorf("script: %q is not a function name", fn)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if code, ok := p.wrapped[fn]; ok {
		return code, nil
	}
	src := "(function () {\n" + p.Source + "\n;return typeof " + fn + " === \"function\" ? " + fn + " : undefined;\n})"
	code, err := vm.Compile(src, quickjs.EvalGlobal)
	if err != nil {
		return nil, fmt.Errorf("script: wrapping the program: %w", err)
	}
	if p.wrapped == nil {
		p.wrapped = map[string][]byte{}
	}
	p.wrapped[fn] = code
	return code, nil
}

// maxStack is the deepest a run's stack may go, in QuickJS's count of
// stack slots: about one a call of a simple function.
const maxStack = 2000

// wrappedLines is the number of lines code puts before the script's own.
const wrappedLines = 1

func init() {
	// QuickJS reads the local time zone through its C library's TZ: make it
	// UTC for every run, so that no result depends on the host's zone. The
	// Go runtime's own time zone is not touched.
	tls := libc.NewTLS()
	defer tls.Close()
	name, err1 := libc.CString("TZ")
	value, err2 := libc.CString("UTC0")
	if err1 != nil || err2 != nil {
		panic("script: cannot set the engine's time zone")
	}
	libc.Xsetenv(tls, name, value, 1)
}

// newEngine prepares an engine: limits set, prelude installed.
func (r *Runner) newEngine() (*engine, error) {
	preludeOnce.Do(func() {
		vm, err := quickjs.NewVM()
		if err != nil {
			preludeErr = err
			return
		}
		defer vm.Close()
		prelude, preludeErr = vm.Compile(preludeSource, quickjs.EvalGlobal)
	})
	if preludeErr != nil {
		return nil, preludeErr
	}
	vm, err := quickjs.NewVM()
	if err != nil {
		return nil, err
	}
	r.engines.Add(1)
	e := &engine{vm: vm, limits: &r.limits}
	vm.SetMemoryLimit(uintptr(r.limits.Memory))
	vm.SetMaxStackSize(maxStack)
	if err := vm.SetEvalTimeout(r.limits.Wall); err != nil {
		_ = vm.Close()
		return nil, err
	}
	if err := vm.RegisterHostFunc("__log", e.log); err != nil {
		_ = vm.Close()
		return nil, err
	}
	if _, err := vm.EvalBytecode(prelude); err != nil {
		_ = vm.Close()
		return nil, err
	}
	return e, nil
}

// settled runs the promise jobs a run left, still watched, and says
// whether the engine is fit for another run: there were none, and the run
// was not interrupted. The jobs' log lines are not kept: the run's result
// was known before them.
func (e *engine) settled(w *watcher) bool {
	logs, dropped := len(e.logs), e.dropped
	jobs, err := e.vm.ExecutePendingJobs()
	e.logs, e.dropped = e.logs[:logs], dropped
	return jobs == 0 && err == nil && !w.exceeded()
}

// log keeps one console.log line.
func (e *engine) log(args []any) (any, error) {
	if len(e.logs) >= e.limits.Logs {
		e.dropped++
		return nil, nil
	}
	line := ""
	if len(args) > 0 {
		line, _ = args[0].(string)
	}
	if len(line) > e.limits.LogLine {
		cut := e.limits.LogLine
		for cut > 0 && !utf8.RuneStart(line[cut]) {
			cut--
		}
		line = line[:cut] + "…"
	}
	e.logs = append(e.logs, line)
	return nil, nil
}

// take returns an idle engine, or prepares one.
func (r *Runner) take() (*engine, error) {
	select {
	case e := <-r.idle:
		return e, nil
	default:
	}
	return r.newEngine()
}

// put keeps an engine that ended its run clean for the next run, or
// closes it.
func (r *Runner) put(e *engine, clean bool) {
	if clean && e.runs < engineRuns {
		e.logs, e.dropped = nil, 0
		select {
		case r.idle <- e:
			return
		default:
		}
	}
	_ = e.vm.Close()
}

// Run calls the program's function fn on input (JSON), with Date's clock at
// clock. It waits for a free slot as long as ctx allows. An *Error is the
// script's failure (a throw or a limit); any other error is the runner's.
func (r *Runner) Run(ctx context.Context, p *Program, fn string, input []byte, clock time.Time) (Outcome, error) {
	select {
	case r.slots <- struct{}{}:
	case <-ctx.Done():
		return Outcome{}, ctx.Err()
	}
	defer func() { <-r.slots }()
	e, err := r.take()
	if err != nil {
		return Outcome{}, err
	}
	e.runs++

	started := time.Now()
	out, clean, err := r.runOn(e, p, fn, input, clock)
	o := Outcome{Output: out, Logs: e.logs, Duration: time.Since(started)}
	if o.Logs == nil {
		o.Logs = []string{}
	}
	if e.dropped > 0 {
		o.Logs = append(o.Logs, fmt.Sprintf("… %d more lines not kept", e.dropped))
	}
	r.put(e, clean)
	return o, err
}

// runOn runs the program on its engine, on a thread of its own, watched
// for CPU time. clean says whether the engine can serve another run: the
// run answered, added no global it could not delete, and left no promise
// job (those are run, watched, after the result is known).
func (r *Runner) runOn(e *engine, p *Program, fn string, input []byte, clock time.Time) (out []byte, clean bool, err error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	w := watch(e.vm, r.limits.CPU)
	defer w.stop()

	code, err := p.code(e.vm, fn)
	if err != nil {
		return nil, false, err
	}
	program, err := e.vm.EvalBytecodeValue(code)
	if err != nil {
		return nil, false, scriptError(err, w)
	}
	defer program.Free()
	res, err := e.vm.Call("__run", program, fn, string(input), r.limits.Output, float64(clock.UnixMilli()))
	if err != nil {
		err = scriptError(err, w)
		var se *Error
		if errors.As(err, &se) && se.Limit == "" {
			// A throw: the engine serves on if the run left it clean.
			reset, rerr := e.vm.Call("__reset")
			return nil, reset == true && rerr == nil && e.settled(w), err
		}
		return nil, false, err
	}
	switch v := res.(type) {
	case string:
		if len(v) < 1 || len(v)-1 > r.limits.Output {
			return nil, false, &Error{Limit: LimitOutput}
		}
		return []byte(v[1:]), v[0] == '1' && e.settled(w), nil
	case int, int32, int64, float64:
		return nil, false, &Error{Limit: LimitOutput}
	}
	return nil, false, fmt.Errorf("script: unexpected result %T", res)
}

// frame is one frame of a QuickJS stack: "    at name (<eval>:3:9)".
var frame = regexp.MustCompile(`^\s*at (\S+) \(<eval>:(\d+):(\d+)\)`)

// preludeFrames are the prelude's own functions, never where a script's
// error is.
var preludeFrames = map[string]bool{"__run": true, "random": true, "log": true, "FixedDate": true, "Date": true}

// scriptError is the *Error of what a run threw, or of the limit it passed.
func scriptError(err error, w *watcher) error {
	if w.exceeded() {
		return &Error{Limit: LimitCPU}
	}
	var qe *quickjs.Error
	if !errors.As(err, &qe) {
		return err
	}
	switch {
	case qe.Name == "InternalError" && (qe.Message == "out of memory" || qe.Message == "string too long"):
		return &Error{Limit: LimitMemory}
	case qe.Name == "InternalError" && qe.Message == "interrupted":
		// The wall-clock backstop (Limits.Wall) ended it.
		return &Error{Limit: LimitCPU}
	case qe.Name == "InternalError" && qe.Message == "stack overflow",
		qe.Name == "RangeError" && strings.Contains(qe.Message, "call stack"):
		return &Error{Limit: LimitStack}
	}
	msg := qe.Message
	if qe.Name != "" {
		msg = qe.Name + ": " + qe.Message
	}
	if qe.Name == "" && qe.Message == "" {
		msg = strings.TrimSpace(err.Error())
	}
	out := &Error{Message: msg, Line: max(qe.LineNumber-wrappedLines, 0), Column: qe.ColumnNumber}
	if out.Line == 0 {
		for _, l := range strings.Split(qe.Stack, "\n") {
			m := frame.FindStringSubmatch(l)
			if m == nil || preludeFrames[m[1]] {
				continue
			}
			line, _ := strconv.Atoi(m[2])
			out.Line = max(line-wrappedLines, 0)
			out.Column, _ = strconv.Atoi(m[3])
			break
		}
	}
	return out
}
