// The example explorer: filters by metric, state and text, and pages through the embedded rows.
// It only shows and hides rows the page already contains; it never writes markup (no innerHTML).
(function () {
  "use strict";
  var PAGE = 50;
  var list = document.getElementById("ex-list");
  if (!list) return;
  var metric = document.getElementById("f-metric");
  var state = document.getElementById("f-state");
  var text = document.getElementById("f-text");
  var prev = document.getElementById("ex-prev");
  var next = document.getElementById("ex-next");
  var pageLabel = document.getElementById("ex-page");
  var status = document.getElementById("ex-status");
  var empty = document.getElementById("ex-empty");
  var pager = document.getElementById("ex-pager");
  var rows = Array.prototype.map.call(list.children, function (item) {
    var cells = Object.create(null); // metric names are data: none may reach Object.prototype
    Array.prototype.forEach.call(item.querySelectorAll(".chip"), function (chip) {
      cells[chip.getAttribute("data-metric")] = {
        states: chip.getAttribute("data-state").split(" "),
        look: chip.getAttribute("data-look") === "1",
      };
    });
    return { item: item, cells: cells, text: item.textContent.toLowerCase() };
  });
  var matched = rows;
  var page = 0;

  function cellMatches(cell, wanted) {
    if (!cell) return false;
    if (!wanted) return true;
    if (wanted === "look") return cell.look;
    return cell.states.indexOf(wanted) >= 0;
  }

  function rowMatches(row, wantedMetric, wantedState, needle) {
    if (needle && row.text.indexOf(needle) < 0) return false;
    if (wantedMetric) return cellMatches(row.cells[wantedMetric], wantedState);
    if (!wantedState) return true;
    return Object.keys(row.cells).some(function (name) {
      return cellMatches(row.cells[name], wantedState);
    });
  }

  function show() {
    var pages = Math.max(1, Math.ceil(matched.length / PAGE));
    if (page >= pages) page = pages - 1;
    var first = page * PAGE;
    rows.forEach(function (row) { row.item.hidden = true; });
    matched.slice(first, first + PAGE).forEach(function (row) { row.item.hidden = false; });
    prev.disabled = page === 0;
    next.disabled = page >= pages - 1;
    pageLabel.textContent = "Page " + (page + 1) + " of " + pages;
    pager.hidden = pages < 2;
    empty.hidden = matched.length > 0;
    status.textContent = matched.length
      ? "Showing " + (first + 1) + "–" + Math.min(first + PAGE, matched.length) + " of " + matched.length +
        " matching (" + rows.length + " embedded)."
      : "No embedded example matches (" + rows.length + " embedded).";
  }

  function filter() {
    var needle = text.value.trim().toLowerCase();
    matched = rows.filter(function (row) { return rowMatches(row, metric.value, state.value, needle); });
    page = 0;
    show();
  }

  metric.addEventListener("change", filter);
  state.addEventListener("change", filter);
  text.addEventListener("input", filter);
  prev.addEventListener("click", function () { page -= 1; show(); list.scrollIntoView({ block: "start" }); });
  next.addEventListener("click", function () { page += 1; show(); list.scrollIntoView({ block: "start" }); });

  // A link to an example card (a flipped id in Comparisons): clear the filters, turn to the card's page, open it.
  function reveal() {
    var target = location.hash.length > 1 ? document.getElementById(location.hash.slice(1)) : null;
    if (!target || target.parentNode !== list) return;
    var at = -1;
    rows.forEach(function (row, index) { if (row.item === target) at = index; });
    metric.value = "";
    state.value = "";
    text.value = "";
    matched = rows;
    page = Math.floor(at / PAGE);
    show();
    var details = target.querySelector("details");
    if (details) details.open = true;
    target.scrollIntoView({ block: "start" });
  }

  window.addEventListener("hashchange", reveal);
  filter();
  reveal();
})();
