// The sessions page's live updates: the event stream of the dashboard
// listener (GET /events, the same as /v1/events), followed after the
// newest event the page was rendered with. An event of a session shown
// updates its last-event cell at once; an event that changes what the
// page shows (anything but a hook's decision) reloads the page a moment
// later, once per burst, so states, iterations and costs follow.
(function () {
  "use strict";
  var live = document.getElementById("live");
  if (!window.EventSource) { if (live) live.textContent = "live: not supported"; return; }
  var reload = null;
  var src = new EventSource("/events?since=" + (document.body.dataset.lastEvent || "0"));
  src.onopen = function () { if (live) live.textContent = "live: connected"; };
  src.onerror = function () { if (live) live.textContent = "live: reconnecting"; };
  function onEvent(msg) {
    var e;
    try { e = JSON.parse(msg.data); } catch (err) { return; }
    if (e.session) {
      var row = document.querySelector('table#sessions tr[data-session="' + e.session + '"]');
      if (row) {
        var cell = row.querySelector("td.last-event");
        if (cell) { cell.textContent = e.kind; cell.dataset.eventId = String(e.id); }
      }
    }
    if (e.kind === "hook.decided") return;
    if (!reload) reload = setTimeout(function () { location.reload(); }, 1500);
  }
  [
    "supervisor.started", "supervisor.stopped", "session.started", "session.ended",
    "hook.decided", "loop.iteration", "loop.ended", "task.done", "task.stuck",
    "review.started", "review.finished", "needs_review", "budget.reached",
    "run.state", "run.wave", "run.task"
  ].forEach(function (k) { src.addEventListener(k, onEvent); });
})();
