// toolgate console: the live call log. Each call the gateway ends is pushed over SSE
// (GET /console/calls/stream, event `call`, data: the call as JSON) and added on top of the
// table. Text only (textContent): nothing from the stream is read as HTML.
"use strict";
(function () {
  const rows = document.getElementById("call-rows");
  if (!rows || !window.EventSource) return;
  const live = document.getElementById("live");
  const source = new EventSource(rows.dataset.stream);
  const keep = 200;
  source.addEventListener("call", function (event) {
    let call;
    try { call = JSON.parse(event.data); } catch (e) { return; }
    const tr = document.createElement("tr");
    const cells = [
      call.time, call.caller, call.tool, call.outcome, call.latency_ms + " ms",
      call.cost === null || call.cost === undefined ? "—" : String(call.cost),
      String(call.retries), call.cache_hit ? "yes" : "no",
    ];
    cells.forEach(function (text, i) {
      const td = document.createElement("td");
      td.textContent = text;
      if (i === 3) td.className = "outcome-" + call.outcome;
      tr.appendChild(td);
    });
    tr.dataset.id = call.id;
    rows.insertBefore(tr, rows.firstChild);
    while (rows.children.length > keep) rows.removeChild(rows.lastChild);
    if (live) live.textContent = "Last call: " + call.tool + " (" + call.outcome + ")";
  });
  source.addEventListener("open", function () { if (live) live.dataset.connected = "true"; });
})();
