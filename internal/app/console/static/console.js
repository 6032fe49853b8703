// Shows every <time datetime> in the viewer's time zone; without this
// script the times read in UTC.
(function () {
  "use strict";
  function local() {
    var fmt;
    try {
      fmt = new Intl.DateTimeFormat(undefined, {
        year: "numeric", month: "short", day: "numeric",
        hour: "2-digit", minute: "2-digit", second: "2-digit", timeZoneName: "short"
      });
    } catch (e) {
      return;
    }
    var list = document.querySelectorAll("time[datetime]");
    for (var i = 0; i < list.length; i++) {
      var el = list[i];
      var d = new Date(el.getAttribute("datetime"));
      if (isNaN(d.getTime())) continue;
      el.title = el.textContent;
      el.textContent = fmt.format(d);
    }
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", local);
  } else {
    local();
  }
})();
