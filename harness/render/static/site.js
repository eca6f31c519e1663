/* ft-harness site: sort and filter the package table (by verdict, interpreter, name), copy
 * reproduce commands.
 * Reads package data only through textContent and data-* attributes and writes
 * only textContent, attributes and the hidden flag: nothing from a package is
 * ever parsed as HTML or run. */
(function () {
  "use strict";

  var table = document.getElementById("packages");
  if (table) {
    var tbody = table.tBodies[0];
    var rows = Array.prototype.slice.call(tbody.rows);
    var select = document.getElementById("verdict-filter");
    var interp = document.getElementById("interp-filter");  // absent with one interpreter
    var search = document.getElementById("search");
    var shown = document.getElementById("shown");
    var empty = document.getElementById("empty");
    var chips = Array.prototype.slice.call(document.querySelectorAll(".chip[data-filter]"));
    // the answer to "does it work without the GIL as with it?" (harness.results.answer)
    var answerChips = Array.prototype.slice.call(document.querySelectorAll(".chip[data-answer-filter]"));
    var answer = "";

    // The cell of interpreter `name` in a row (compared as text, never put in a selector).
    var cellOf = function (row, name) {
      for (var i = 0; i < row.cells.length; i += 1) {
        if (row.cells[i].getAttribute("data-interp") === name) { return row.cells[i]; }
      }
      return null;
    };
    var columnCells = Array.prototype.slice.call(table.querySelectorAll("[data-interp]"));

    var apply = function () {
      var verdict = select.value;
      var only = interp ? interp.value : "";
      var q = search.value.trim().toLowerCase();
      var n = 0;
      rows.forEach(function (row) {
        // a package's verdict is its most severe one; with an interpreter picked, that cell's
        var cell = only ? cellOf(row, only) : null;
        var has = only ? (cell !== null && cell.hasAttribute("data-verdict")) : true;
        var v = only ? (cell ? cell.getAttribute("data-verdict") : null) : row.getAttribute("data-verdict");
        var a = only ? (cell ? cell.getAttribute("data-answer") : null) : row.getAttribute("data-answer");
        var ok = has && (!verdict || v === verdict) && (!answer || a === answer) &&
          (!q || (row.getAttribute("data-name") || "").indexOf(q) !== -1);
        row.hidden = !ok;
        if (ok) { n += 1; }
      });
      columnCells.forEach(function (c) {
        c.hidden = only !== "" && c.getAttribute("data-interp") !== only;
      });
      shown.textContent = n + " of " + rows.length + " shown";
      empty.hidden = n !== 0;
      chips.forEach(function (chip) {
        chip.classList.toggle("is-active", chip.getAttribute("data-filter") === verdict);
      });
      answerChips.forEach(function (chip) {
        chip.classList.toggle("is-active", chip.getAttribute("data-answer-filter") === answer);
      });
      var params = new URLSearchParams();
      if (answer) { params.set("answer", answer); }
      if (verdict) { params.set("verdict", verdict); }
      if (only) { params.set("interpreter", only); }
      if (q) { params.set("q", q); }
      var hash = params.toString();
      if (history.replaceState) {
        history.replaceState(null, "", hash ? "#" + hash : location.pathname + location.search);
      }
    };

    chips.forEach(function (chip) {
      chip.addEventListener("click", function () {
        var v = chip.getAttribute("data-filter");
        select.value = (select.value === v) ? "" : v;
        apply();
      });
    });
    answerChips.forEach(function (chip) {
      chip.addEventListener("click", function () {
        var a = chip.getAttribute("data-answer-filter");
        answer = (answer === a) ? "" : a;
        apply();
      });
    });
    select.addEventListener("change", apply);
    if (interp) { interp.addEventListener("change", apply); }
    search.addEventListener("input", apply);

    var initial = new URLSearchParams(location.hash.slice(1));
    var choose = function (sel, wanted) {
      if (sel && Array.prototype.some.call(sel.options, function (o) { return o.value === wanted; })) {
        sel.value = wanted;
      }
    };
    choose(select, initial.get("verdict") || "");
    choose(interp, initial.get("interpreter") || "");
    search.value = initial.get("q") || "";
    answerChips.forEach(function (chip) {
      if (chip.getAttribute("data-answer-filter") === initial.get("answer")) { answer = initial.get("answer"); }
    });

    var buttons = Array.prototype.slice.call(table.tHead.querySelectorAll("button[data-sort]"));
    buttons.forEach(function (button) {
      button.addEventListener("click", function () {
        var col = button.closest("th").cellIndex;
        var numeric = button.getAttribute("data-sort") === "num";
        var dir = button.getAttribute("aria-sort") === "ascending" ? -1 : 1;
        buttons.forEach(function (b) { b.removeAttribute("aria-sort"); });
        button.setAttribute("aria-sort", dir === 1 ? "ascending" : "descending");
        var key = function (row) {
          var cell = row.cells[col];
          var v = cell.hasAttribute("data-sort") ? cell.getAttribute("data-sort") : cell.textContent;
          return numeric ? parseFloat(v) : v.toLowerCase();
        };
        var sorted = rows.slice().sort(function (a, b) {
          var ka = key(a), kb = key(b);
          if (numeric) {
            if (isNaN(ka)) { ka = -Infinity; }
            if (isNaN(kb)) { kb = -Infinity; }
            return (ka - kb) * dir || rows.indexOf(a) - rows.indexOf(b);
          }
          return (ka < kb ? -1 : ka > kb ? 1 : 0) * dir || rows.indexOf(a) - rows.indexOf(b);
        });
        sorted.forEach(function (row) { tbody.appendChild(row); });
      });
    });
    apply();
  }

  Array.prototype.forEach.call(document.querySelectorAll("button.copy[data-copy]"), function (button) {
    button.addEventListener("click", function () {
      var pre = document.getElementById(button.getAttribute("data-copy"));
      if (!pre) { return; }
      var text = pre.textContent;
      var done = function () {
        button.textContent = "copied";
        setTimeout(function () { button.textContent = "copy"; }, 1500);
      };
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(text).then(done, function () { if (selectText(pre)) { done(); } });
      } else if (selectText(pre)) {
        done();
      }
    });
  });

  function selectText(el) {
    var range = document.createRange();
    range.selectNodeContents(el);
    var sel = window.getSelection();
    sel.removeAllRanges();
    sel.addRange(range);
    try { return document.execCommand("copy"); } catch (e) { return false; /* selected only */ }
  }
}());
