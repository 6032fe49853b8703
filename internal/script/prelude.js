// The environment every script runs in: installed on a fresh engine before
// the script's own code, once per run. It makes a run depend on its input
// alone: Date's clock is fixed, Math.random and the garbage collector's
// observers are gone, and console.log writes to the run's log.
(function () {
  "use strict";
  const RealDate = Date;
  const realLog = __log;
  delete globalThis.__log;
  delete globalThis.WeakRef;
  delete globalThis.FinalizationRegistry;
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

  // __start sets the run's clock (milliseconds since the epoch).
  Object.defineProperty(globalThis, "__start", {
    value: function (ms) { clock = ms; delete globalThis.__start; },
    configurable: true,
  });
  // __run calls the script's function on its input (JSON) and answers the
  // result as JSON, or -1 when that JSON is over max characters.
  Object.defineProperty(globalThis, "__run", {
    value: function (name, input, max) {
      let f;
      try { f = (0, eval)(name); } catch (e) { f = undefined; }
      if (typeof f !== "function") throw new TypeError("the script defines no function " + name);
      const out = f(JSON.parse(input));
      if (out === undefined) throw new TypeError(name + " returned undefined: return a value, or null");
      const s = JSON.stringify(out);
      if (s === undefined) throw new TypeError(name + " returned a value JSON cannot hold");
      return s.length > max ? -1 : s;
    },
  });
})();
