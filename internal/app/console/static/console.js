// Shows every <time datetime> in the viewer's time zone and names that zone
// in the footer (#shown-zone). The forms with time inputs then take their
// times in it too: a form's hidden tz field says which zone its
// datetime-local values are in (data-values-zone: UTC, or the zone a
// filtered list was asked in); the values are turned into the viewer's
// zone, tz becomes that zone, and the labels' [data-zone-name] name it.
// Without this script every time reads, and is taken, in UTC.
(function () {
  "use strict";
  // local shows the times in the viewer's zone; false when it cannot.
  function local() {
    var fmt;
    try {
      fmt = new Intl.DateTimeFormat(undefined, {
        year: "numeric", month: "short", day: "numeric",
        hour: "2-digit", minute: "2-digit", second: "2-digit", timeZoneName: "short"
      });
    } catch (e) {
      return false;
    }
    var list = document.querySelectorAll("time[datetime]");
    for (var i = 0; i < list.length; i++) {
      var el = list[i];
      var d = new Date(el.getAttribute("datetime"));
      if (isNaN(d.getTime())) continue;
      el.title = el.textContent;
      el.textContent = fmt.format(d);
    }
    return true;
  }

  // offset is how far the wall clock of zone is ahead of UTC at the
  // instant ms, in milliseconds.
  function offset(zone, ms) {
    var p = {};
    var list = new Intl.DateTimeFormat("en-US", {
      timeZone: zone, hourCycle: "h23", year: "numeric", month: "2-digit", day: "2-digit",
      hour: "2-digit", minute: "2-digit", second: "2-digit"
    }).formatToParts(new Date(ms));
    for (var i = 0; i < list.length; i++) p[list[i].type] = list[i].value;
    var secs = Math.floor(ms / 1000) * 1000;
    return Date.UTC(+p.year, +p.month - 1, +p.day, +p.hour % 24, +p.minute, +p.second) - secs;
  }

  var valueRe = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,3}))?)?$/;

  function pad(n, w) {
    var s = String(n);
    while (s.length < (w || 2)) s = "0" + s;
    return s;
  }

  // convert turns a datetime-local value read in zone from into the same
  // instant's value in zone to; null when it is not such a value.
  function convert(value, from, to) {
    var m = valueRe.exec(value);
    if (!m) return null;
    var ms = m[7] ? +(m[7] + "00").slice(0, 3) : 0;
    var wall = Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +(m[6] || 0), ms);
    // The instant whose wall clock in from reads wall (the offset at the
    // first guess, then at the instant it gives).
    var at = wall - offset(from, wall);
    at = wall - offset(from, at);
    var d = new Date(at + offset(to, at));
    if (isNaN(d.getTime())) return null;
    var out = pad(d.getUTCFullYear(), 4) + "-" + pad(d.getUTCMonth() + 1) + "-" + pad(d.getUTCDate()) +
      "T" + pad(d.getUTCHours()) + ":" + pad(d.getUTCMinutes());
    if (m[6] !== undefined || d.getUTCSeconds() || d.getUTCMilliseconds()) {
      out += ":" + pad(d.getUTCSeconds());
      if (m[7] !== undefined || d.getUTCMilliseconds()) out += "." + pad(d.getUTCMilliseconds(), 3);
    }
    return out;
  }

  // zones makes each form with a tz field take its times in zone. A form
  // whose values cannot be turned keeps the zone it was given, and its
  // labels keep naming it.
  function zones(zone) {
    var fields = document.querySelectorAll('form input[name="tz"][data-values-zone]');
    for (var i = 0; i < fields.length; i++) {
      var tz = fields[i];
      var form = tz.form;
      var from = tz.getAttribute("data-values-zone") || "UTC";
      var inputs = form ? form.querySelectorAll('input[type="datetime-local"]') : [];
      var values = [];
      var ok = !!form;
      for (var j = 0; ok && j < inputs.length; j++) {
        // Only the value the page was given is in from: one the browser
        // restored on going back was turned (or typed) in zone already.
        var probe = document.createElement("input");
        probe.type = "datetime-local";
        probe.value = inputs[j].defaultValue;
        var given = probe.value; // as the browser holds it ("" if not one)
        if (given === "" || from === zone || inputs[j].value !== given) {
          values.push(inputs[j].value);
          continue;
        }
        try {
          values.push(convert(given, from, zone));
        } catch (e) {
          values.push(null);
        }
        ok = values[j] !== null;
      }
      if (!ok) {
        tz.value = from;
        continue;
      }
      for (j = 0; j < inputs.length; j++) inputs[j].value = values[j];
      tz.value = zone;
      var names = form.querySelectorAll("[data-zone-name]");
      for (j = 0; j < names.length; j++) names[j].textContent = zone;
    }
  }

  function start() {
    var zone = "";
    try {
      zone = new Intl.DateTimeFormat().resolvedOptions().timeZone || "";
    } catch (e) {
      zone = "";
    }
    if (!local() || !zone) return;
    var shown = document.getElementById("shown-zone");
    if (shown) shown.textContent = zone;
    zones(zone);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();

// A page that asks to refresh itself (<body data-refresh="seconds">: the
// running bulk replay's) reloads every so many seconds while its
// #auto-refresh box is ticked, which the viewer can untick; a reload waits
// while something on the page has the focus, so that a keyboard can reach
// that box. A table that scrolls sideways in its own box (on a phone) is
// made focusable, so that a keyboard can scroll it.
(function () {
  "use strict";
  function refresh() {
    var seconds = +document.body.getAttribute("data-refresh");
    if (!(seconds > 0)) return;
    var box = document.getElementById("auto-refresh");
    var control = document.getElementById("auto-refresh-control");
    if (control) control.hidden = false;
    var timer = 0;
    function schedule() {
      clearTimeout(timer);
      timer = setTimeout(function () {
        if (box && !box.checked) return;
        var focused = document.activeElement;
        if (focused && focused !== document.body) {
          schedule();
          return;
        }
        location.reload();
      }, seconds * 1000);
    }
    if (box) box.addEventListener("change", schedule);
    schedule();
  }

  function scrollers() {
    var list = document.querySelectorAll("main table");
    for (var i = 0; i < list.length; i++) {
      var table = list[i];
      if (table.scrollWidth > table.clientWidth) {
        table.setAttribute("tabindex", "0");
      } else if (table.getAttribute("tabindex") === "0") {
        table.removeAttribute("tabindex");
      }
    }
  }

  function start() {
    refresh();
    scrollers();
    window.addEventListener("resize", scrollers);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();

// The mapping editor: a source that did not compile has the caret put
// where its error is; Ctrl+Enter (Cmd+Enter) in the text box runs it; and
// once the text or the picked receipt changes, the run shown says it is of
// what was there before. Without this script the forms work the same.
(function () {
  "use strict";
  function start() {
    var source = document.getElementById("source");
    if (!source) return;
    var line = +source.getAttribute("data-error-line");
    if (line > 0) {
      var column = +source.getAttribute("data-error-column") || 1;
      var lines = source.value.split("\n");
      var at = 0;
      for (var i = 0; i < line - 1 && i < lines.length; i++) at += lines[i].length + 1;
      at = Math.min(at + column - 1, source.value.length);
      source.focus();
      source.setSelectionRange(at, at);
      var height = parseFloat(getComputedStyle(source).lineHeight) || 18;
      source.scrollTop = Math.max(0, (line - 4) * height);
    }
    var run = document.getElementById("run");
    source.addEventListener("keydown", function (e) {
      if (run && e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
        e.preventDefault();
        run.click();
      }
    });
    var note = document.getElementById("stale-note");
    if (!note) return;
    function stale() {
      note.hidden = false;
    }
    source.addEventListener("input", stale);
    var picks = document.querySelectorAll('#receipt-picker input[name="receipt"]');
    for (var j = 0; j < picks.length; j++) picks[j].addEventListener("change", stale);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
