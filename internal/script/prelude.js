// The environment every script runs in, installed once on each engine
// before any script. It makes a run depend on its input alone: Date's clock
// is fixed, Math.random, eval and the garbage collector's observers are
// gone, and console.log writes to the run's log. Then it freezes every
// built-in, so that nothing one run does can be seen by the next run on
// the same engine: a run can add globals, which are deleted after it, and
// change nothing else.
(function () {
  "use strict";
  const RealDate = Date;
  const realLog = __log;
  delete globalThis.__log;
  delete globalThis.WeakRef;
  delete globalThis.FinalizationRegistry;
  // eval is gone: an indirect eval could declare a global let or const,
  // which no cleanup can remove.
  delete globalThis.eval;
  Object.defineProperty(Math, "random", {
    value: function random() {
      throw new TypeError("Math.random is not available: the same input must always give the same result");
    },
  });

  let clock = 0;
  function FixedDate(...args) {
    if (!new.target) return new RealDate(clock).toString();
    return Reflect.construct(RealDate, args.length === 0 ? [clock] : args, new.target);
  }
  Object.defineProperty(FixedDate, "name", { value: "Date" });
  FixedDate.prototype = RealDate.prototype;
  FixedDate.now = function now() { return clock; };
  FixedDate.parse = RealDate.parse;
  FixedDate.UTC = RealDate.UTC;
  Object.defineProperty(RealDate.prototype, "constructor", { value: FixedDate, writable: true, configurable: true });
  globalThis.Date = FixedDate;

  function show(v) {
    if (typeof v === "string") return v;
    try {
      const s = JSON.stringify(v);
      return s === undefined ? String(v) : s;
    } catch (e) {
      return String(v);
    }
  }
  const console = {
    log(...args) { realLog(args.map(show).join(" ")); },
  };
  console.info = console.warn = console.error = console.debug = console.log;
  Object.defineProperty(globalThis, "console", { value: console, writable: true, configurable: true });

  // A frozen prototype makes assigning a property of the same name to an
  // object that inherits it fail ("err.name = ..." on an Error). These
  // properties, the ones scripts commonly assign, become accessors whose
  // setter gives the object its own property instead.
  function overridable(proto, names) {
    for (const name of names) {
      const d = Reflect.getOwnPropertyDescriptor(proto, name);
      if (!d || !("value" in d) || !d.writable || !d.configurable) continue;
      const value = d.value;
      Object.defineProperty(proto, name, {
        get() { return value; },
        set(v) {
          if (this === proto) throw new TypeError("Cannot assign to read only property '" + String(name) + "' of a built-in");
          Object.defineProperty(this, name, { value: v, writable: true, enumerable: true, configurable: true });
        },
        enumerable: d.enumerable,
        configurable: false,
      });
    }
  }
  overridable(Object.prototype, Reflect.ownKeys(Object.prototype));
  overridable(Function.prototype, ["constructor", "toString"]);
  for (const E of [Error, EvalError, RangeError, ReferenceError, SyntaxError, TypeError, URIError,
    globalThis.AggregateError, globalThis.InternalError]) {
    if (typeof E === "function") overridable(E.prototype, ["constructor", "name", "message", "toString"]);
  }

  // Built-ins that no global names, reached from an instance.
  const hidden = [
    function* () {}, async function () {}, async function* () {}, async () => {},
    (function* () {})(), (async function* () {})(),
    [][Symbol.iterator](), new Map()[Symbol.iterator](), new Set()[Symbol.iterator](),
    ""[Symbol.iterator](), /a/g[Symbol.matchAll](""),
    (function () { "use strict"; return Reflect.getOwnPropertyDescriptor(arguments, "callee").get; })(),
  ];
  try { hidden.push([].values().map((x) => x)); } catch (e) { /* no iterator helpers */ }
  try { hidden.push(Iterator.from({ next() { return { done: true }; } })); } catch (e) { /* no Iterator.from */ }

  // Every object reachable from the globals and those instances, through
  // prototypes, property values and accessors, is frozen; the instances
  // themselves are thrown away.
  const instances = new Set(hidden);
  const seen = new Set();
  const todo = [globalThis, ...hidden];
  while (todo.length > 0) {
    const o = todo.pop();
    if (o === null || (typeof o !== "object" && typeof o !== "function") || seen.has(o)) continue;
    seen.add(o);
    todo.push(Reflect.getPrototypeOf(o));
    for (const key of Reflect.ownKeys(o)) {
      const d = Reflect.getOwnPropertyDescriptor(o, key);
      if ("value" in d) todo.push(d.value);
      else todo.push(d.get, d.set);
    }
  }
  for (const o of seen) {
    if (o !== globalThis && !instances.has(o)) Object.freeze(o);
  }

  // __run calls a script's function on its input (JSON). It answers the
  // result as JSON after a one-character prefix, "1" when the engine is as
  // the prelude left it and can run another script, "0" when it is not;
  // or -1 when the JSON is over max characters. __reset, after a run that
  // threw, answers whether the engine is as the prelude left it.
  let running = false;
  function clean() {
    const keys = Reflect.ownKeys(globalThis);
    if (keys.length !== globals.size) {
      for (const key of keys) {
        if (!globals.has(key) && !Reflect.deleteProperty(globalThis, key)) return false;
      }
    }
    return Reflect.getPrototypeOf(globalThis) === globalProto && Reflect.isExtensible(globalThis) &&
      Reflect.ownKeys(globalThis).length === globals.size;
  }
  Object.defineProperty(globalThis, "__run", {
    value: function (program, name, input, max, ms) {
      if (running) throw new TypeError("__run is not for scripts");
      running = true;
      clock = ms;
      try {
        const f = program();
        if (typeof f !== "function") throw new TypeError("the script defines no function " + name);
        const out = f(JSON.parse(input));
        if (out === undefined) throw new TypeError(name + " returned undefined: return a value, or null");
        const s = JSON.stringify(out);
        if (s === undefined) throw new TypeError(name + " returned a value JSON cannot hold");
        if (s.length > max) return -1;
        return (clean() ? "1" : "0") + s;
      } finally {
        running = false;
      }
    },
  });

  Object.defineProperty(globalThis, "__reset", {
    value: function () {
      if (running) throw new TypeError("__reset is not for scripts");
      return clean();
    },
  });

  // The globals stay, unchangeable; a run may add its own.
  for (const key of Reflect.ownKeys(globalThis)) {
    const d = Reflect.getOwnPropertyDescriptor(globalThis, key);
    if ("value" in d) Object.defineProperty(globalThis, key, { writable: false, configurable: false });
    else Object.defineProperty(globalThis, key, { configurable: false });
  }
  const globals = new Set(Reflect.ownKeys(globalThis));
  const globalProto = Reflect.getPrototypeOf(globalThis);
})();
