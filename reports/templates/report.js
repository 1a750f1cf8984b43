// The report's own script: one drawer for every panel (built from the embedded evidence: JSON, gzip, base64),
// shareable cell addresses, and the matrix's filters. Without it the page still works: every panel is a <details>
// element. Text from records is only ever set with textContent, never parsed as markup.
(function () {
  "use strict";
  var DATA = null;
  var J = JSON.parse(document.getElementById("judgement").textContent);  // harness.judgement's words, by constant
  var evidence = (function () {
    try {
      var text = atob(document.getElementById("evidence").textContent.trim());
      var bytes = new Uint8Array(text.length);
      for (var i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
      var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
      return new Response(stream).json().then(function (found) { DATA = found; });
    } catch (error) {
      return Promise.reject(error);
    }
  })();
  var drawer = document.getElementById("drawer");
  var drawerBody = document.getElementById("drawer-body");
  var current = null;
  var matrixHeads = Array.prototype.slice.call(document.querySelectorAll("table.matrix thead th.colhead"));
  // An observed cell's evidence is its entry of the evidence document, in the page's own cell order (a snapshot:
  // sorting rows later does not renumber them); looked up when a cell opens, never for all cells at load.
  var observedCells = document.querySelectorAll("table.matrix tbody td[class^='o-']");

  function evidenceIndex(td) {
    return td.matches("table.matrix td[class^='o-']") ? Array.prototype.indexOf.call(observedCells, td) : -1;
  }

  // A matrix cell's address, case/variant@target (or target@host): its row's id, then its column's (col-<anchor>).
  // Cells carry no id of their own: 9 000 of them would be a tenth of the page.
  function addressOf(td) {
    return td.closest("tr").id + "@" + matrixHeads[td.cellIndex - 1].id.slice(4);
  }

  function cellAt(address) {
    var at = address.indexOf("@");  // case/variant never holds one; target@host does
    var row = at > 0 && document.getElementById(address.slice(0, at));
    var head = at > 0 && document.getElementById("col-" + address.slice(at + 1));
    var column = head ? matrixHeads.indexOf(head) : -1;
    return row && row.matches("table.matrix tr[data-variant]") && column >= 0 ? row.cells[column + 1] : null;
  }

  function shared(value) {
    if (value && typeof value === "object" && !Array.isArray(value) && Object.keys(value).length === 1 && "$" in value) {
      return DATA.shared[value.$];
    }
    return value;
  }

  function el(tag, attrs) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (name) {
      if (name === "text") node.textContent = attrs.text; else node.setAttribute(name, attrs[name]);
    });
    for (var i = 2; i < arguments.length; i++) {
      var child = arguments[i];
      if (child === null || child === undefined || child === false) continue;
      node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    }
    return node;
  }

  function cosine(value) {
    return value === null || value === undefined ? "–" : (Math.floor(value * 1e4) / 1e4).toFixed(4);
  }

  function sqnr(value) {
    return value === null || value === undefined ? "∞ dB" : value.toFixed(1) + " dB";
  }

  function definitions(pairs) {
    var dl = el("dl");
    pairs.forEach(function (pair) {
      if (pair[1] === null || pair[1] === undefined || pair[1] === "") return;
      dl.appendChild(el("dt", {text: pair[0]}));
      dl.appendChild(el("dd", {}, pair[1]));
    });
    return dl;
  }

  function table(head, rows, rowClass) {
    var t = el("table", {}, el("tr", {}));
    head.forEach(function (name) { t.firstChild.appendChild(el("th", {text: name})); });
    rows.forEach(function (cells, index) {
      var tr = el("tr", rowClass ? {class: rowClass(index)} : {});
      cells.forEach(function (cell) { tr.appendChild(el("td", {}, cell)); });
      t.appendChild(tr);
    });
    return t;
  }

  function link(url) {
    return /^https?:\/\//.test(url) ? el("a", {href: url, rel: "noreferrer", text: url}) : url;
  }

  function claimBox(claim) {
    var text = claim.outcome + (claim.category ? " (" + claim.category + ")" : "");
    return el("div", {class: "claim-box"}, definitions([
      ["upstream claims", el("span", {}, el("b", {text: text}), ": claimed upstream, not observed by this project")],
      ["strength", DATA.strengths[claim.strength] || claim.strength], ["source", link(claim.source)],
      ["note", claim.note || null]]));
  }

  function verdictText(record, agrees) {
    if (agrees === true) return "agrees: the observation matches the upstream claim";
    if (agrees === false) return "disagrees: the observation contradicts the upstream claim";
    return "no verdict: " + (DATA.evidence.indexOf(record.outcome) < 0
      ? "this outcome says nothing about the pattern" : "the claim cannot be compared with this outcome");
  }

  function cellPanel(td) {
    var r = DATA.cells[evidenceIndex(td)];
    var page = r.page || {};
    var row = td.closest("tr");
    var claim = shared(page.claim) || shared(r.expectation);
    var agrees = page.claim ? page.agrees : r.agrees;
    var note = shared(page.note);
    var column = matrixHeads[td.cellIndex - 1];
    var failure = r.failure;
    var metrics = r.metrics;
    var provenance = r.provenance || {};
    var body = [el("h3", {text: row.dataset.case + " / " + row.dataset.variant + " on " + column.dataset.target})];
    body.push(definitions([
      ["outcome", el("span", {}, el("span", {class: "chip o-" + r.outcome, text: DATA.symbols[r.outcome] + " " + r.outcome}),
        " " + DATA.meanings[r.outcome])],
      ["stage", r.stage + (r.outcome === J.PASS ? " (reached)" : " (ended in)")],
      ["failure", failure ? el("b", {text: failure.category}) : null],
      ["message", failure ? failure.message : null],
      ["node", failure && failure.node ? el("code", {text: failure.node}) : null],
      ["mode", r.mode],
      ["duration", (r.duration_s || 0).toFixed(2) + " s" + (r.backend_time_s !== null && r.backend_time_s !== undefined
        ? " (backend " + r.backend_time_s.toFixed(2) + " s)" : "")],
      ["started", r.started_at],
      ["env mismatch", r.env_mismatch ? el("span", {class: "flag", text: "⚠ " + r.env_mismatch}) : null],
      ["run", provenance.run ? el("code", {text: provenance.run}) : null],
      ["host", provenance.host || null],
      ["address", el("a", {href: "#" + addressOf(td), text: "#" + addressOf(td)})],
      ["history", DATA.trend ? el("a", {href: DATA.trend + "#" + row.id, text: "this cell, night after night"}) : null]]));
    if (provenance.carried_over_from) {
      body.push(el("p", {class: "carried-note"}, "↻ Carried over from run ", el("code", {text: provenance.carried_over_from}),
        ": inputs and environment unchanged, not rerun in run ", el("code", {text: provenance.run}), "."));
    }
    if (page.conflict) {
      body.push(el("p", {class: "conflict-note", text: "⚡ Conflict: the hosts of this target disagree on this cell: " +
        Object.keys(page.conflict).map(function (h) { return h + ": " + page.conflict[h]; }).join(", ") + "."}));
    }
    if (note) body.push(el("p", {class: "note-box", text: "ℹ " + note}));
    body.push(el("h4", {text: "Upstream expectation"}));
    if (claim) {
      body.push(claimBox(claim), el("p", {}, el("b", {text: verdictText(r, agrees)})));
    } else {
      body.push(el("p", {text: "No upstream claim for this target."}));
    }
    body.push(el("h4", {text: "Metrics against the FP32 reference"}));
    if (metrics) {
      var tolerance = shared(metrics.tolerance) || {};
      body.push(definitions([
        ["cosine", cosine(metrics.cosine) + " (min " + tolerance.min_cosine + ")"], ["SQNR", sqnr(metrics.sqnr_db)],
        ["max abs error", metrics.max_abs_error + " (max " + tolerance.max_abs_error + ")"],
        ["within tolerance", metrics.within_tolerance ? "yes" : "no"], ["why this tolerance", tolerance.reason]]));
      if (metrics.outputs) {
        body.push(table(["output", "cosine", "SQNR", "max abs error"], Object.keys(metrics.outputs).sort().map(function (name) {
          var m = metrics.outputs[name];
          return [el("code", {text: name}), cosine(m.cosine), sqnr(m.sqnr_db), String(m.max_abs_error)];
        })));
      }
    } else {
      body.push(el("p", {text: "None: the cell did not reach the comparison."}));
    }
    var precision = r.precision || {};
    var fallback = r.fallback_nodes || [];
    var expected = shared(r.expected_int8) || [];
    body.push(el("h4", {text: "Fallback nodes" + (Object.keys(precision).length || fallback.length ? " (" + fallback.length + ")" : "")}));
    if (fallback.length) {
      body.push(el.apply(null, ["ul", {}].concat(fallback.map(function (n) { return el("li", {}, el("code", {text: n})); }))));
    } else {
      body.push(el("p", {text: Object.keys(precision).length ? "None: every expected-INT8 node ran in INT8." : "Not observed."}));
    }
    body.push(el("h4", {text: "Per-node precision"}));
    var nodes = Object.keys(precision).sort();
    body.push(nodes.length ? table(["ONNX node", "precision", "expected INT8"], nodes.map(function (n) {
      return [el("code", {text: n}), precision[n], expected.indexOf(n) >= 0 ? "yes" : ""];
    }), function (index) { return fallback.indexOf(nodes[index]) >= 0 ? J.FALLBACK : ""; }) : el("p", {text: "Not observed."}));
    var warnings = shared(r.warnings) || {};
    if (Object.keys(warnings).length) {
      body.push(el("h4", {text: "Warnings"}), table(["kind", "count"], Object.keys(warnings).sort().map(function (k) {
        return [k, String(warnings[k])];
      })));
    }
    body.push(el("h4", {text: "Log excerpt"}), r.log ? el("pre", {text: r.log}) : el("p", {text: "No log."}));
    var environment = shared(r.environment) || {};
    body.push(el("h4", {text: "Environment (observed inside the cell)"}), table(["key", "value"],
      Object.keys(environment).sort().map(function (k) {
        var v = environment[k];
        return [k, typeof v === "string" ? v : el("code", {text: JSON.stringify(v)})];
      })));
    body.push(el("h4", {text: "Knobs and backend details"}), el("pre", {text: JSON.stringify(
      {knobs: shared(r.knobs), expected_int8: expected, details: shared(r.details)}, null, 1)}));
    return body;
  }

  function copyPanel(source) {  // the short panel; a pass with nothing more to say has only its face
    var pop = source.querySelector(".pop") || el("div", {}, el("p", {text: source.querySelector("summary").textContent}));
    var copy = pop.cloneNode(true);
    return Array.prototype.slice.call(copy.childNodes);
  }

  function openDrawer(source, nodes, address) {
    if (current) current.classList.remove("current");
    current = source;
    source.classList.add("current");
    drawerBody.replaceChildren.apply(drawerBody, nodes);
    drawer.hidden = false;
    document.body.classList.add("drawer-open");
    drawer.scrollTop = 0;
    source.scrollIntoView({block: "nearest", inline: "nearest"});  // the page narrowed: keep the opener in view
    if (address && location.hash !== "#" + address) history.replaceState(null, "", "#" + address);
  }

  function closeDrawer() {
    if (current) current.classList.remove("current");
    current = null;
    drawer.hidden = true;
    document.body.classList.remove("drawer-open");
  }

  function open(source) {
    if (source === current) { closeDrawer(); return; }
    if (evidenceIndex(source) < 0) {
      openDrawer(source, copyPanel(source), source.matches("table.matrix td") ? addressOf(source) : source.id || null);
      return;
    }
    evidence.then(function () {
      openDrawer(source, cellPanel(source), addressOf(source));
    }, function () {  // a browser without DecompressionStream: the short panel, and why
      openDrawer(source, copyPanel(source).concat([el("p", {class: "note-box", text: "This browser cannot unpack " +
        "the page's evidence (it needs DecompressionStream): log, per-node precision and environment are not shown."})]),
        addressOf(source));
    });
  }

  // Every panel opener is a <summary>: with this script it opens the one drawer instead of its <details>.
  document.addEventListener("click", function (event) {
    if (event.target.closest("#drawer .close")) { closeDrawer(); return; }
    var summary = event.target.closest("summary");
    if (!summary || event.target.closest("a") || summary.closest("#filters")) return;
    var source = summary.closest("table.matrix td, td.v, th.colhead");
    if (!source || (evidenceIndex(source) < 0 && !source.querySelector(".pop"))) return;
    event.preventDefault();
    open(source);
  });
  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && current) closeDrawer();
  });

  function openFromAddress() {
    var id = decodeURIComponent(location.hash.slice(1));
    var target = id && (cellAt(id) || document.getElementById(id));
    if (!target) return;
    if (target.matches("table.matrix td")) {
      revealRow(target.closest("tr"));
      if (target !== current) open(target);
    } else {
      target.scrollIntoView({block: "start"});
    }
  }
  window.addEventListener("hashchange", openFromAddress);

  // ---------- filters of the full matrix ----------
  var form = document.getElementById("filters");
  var matrix = document.querySelector("table.matrix");
  var heads = Array.prototype.slice.call(matrix.querySelectorAll("thead th.colhead"));
  var groups = Array.prototype.slice.call(matrix.tBodies);
  var rows = Array.prototype.slice.call(matrix.querySelectorAll("tbody tr[data-variant]"));
  var columnStyle = document.head.appendChild(document.createElement("style"));
  var SEVERITY = JSON.parse(matrix.dataset.attention);  // outcome -> how much it calls for attention (judgement.py)

  var KINDS = {cl: J.CLAIMED, nr: J.NOT_RUN, na: J.CANNOT_EXIST_HERE};

  function kindOf(td) {  // o-<outcome> for an observed cell, else cl, nr or na
    var name = td.className.split(" ")[0];
    return name.slice(0, 2) === "o-" ? name.slice(2) : KINDS[name];
  }

  function checked(fieldset) {
    var values = {};
    form.querySelectorAll("#" + fieldset + " input:checked").forEach(function (box) { values[box.value] = true; });
    return values;
  }

  function visibleColumns() {
    var platforms = checked("f-platform");
    var shown = checked("f-columns");
    var version = form.querySelector("#f-version").value;
    return heads.map(function (th, index) {
      return !!(platforms[th.dataset.group] && shown[String(index + 1)] && (!version || th.dataset.version === version));
    });
  }

  function revealRow(row) {
    if (row && row.classList.contains("hide")) { form.reset(); apply(); }
  }

  function apply() {
    var columns = visibleColumns();
    var rules = [];
    columns.forEach(function (visible, index) {
      if (!visible) rules.push("table.matrix tr > :nth-child(" + (index + 2) + ")");
    });
    columnStyle.textContent = rules.length ? rules.join(",\n") + " { display: none; }" : "";
    var text = form.querySelector("#f-text").value.trim().toLowerCase();
    var outcomes = checked("f-outcome");
    var everyOutcome = !form.querySelector("#f-outcome input:not(:checked)");
    var anyColumn = columns.some(Boolean);
    var patterns = checked("f-pattern");
    var shown = 0;
    rows.forEach(function (row) {
      // a row shows when one of its shown cells has a checked outcome: with every box checked (the page as it
      // loads) that is any shown cell, and no cell needs reading
      var any = everyOutcome ? anyColumn : rowHas(row, columns, outcomes);
      if (text && row._text === undefined) row._text = row.textContent.toLowerCase();
      var visible = any && patterns[row.dataset.pattern] && (!text || row._text.indexOf(text) >= 0);
      row.classList.toggle("hide", !visible);
      if (visible) shown++;
    });
    groups.forEach(function (tbody) {
      tbody.classList.toggle("hide", !tbody.querySelector("tr[data-variant]:not(.hide)"));
    });
    form.querySelector("#f-count").textContent = "showing " + shown + " of " + rows.length + " variants, " +
      columns.filter(Boolean).length + " of " + heads.length + " columns";
    sort(columns);
  }

  function rowHas(row, columns, outcomes) {
    for (var i = 1; i < row.cells.length; i++) {
      if (columns[i - 1] && outcomes[kindOf(row.cells[i])]) return true;
    }
    return false;
  }

  function score(row, columns) {  // how much a row calls for attention over its shown cells
    var total = 0;
    for (var i = 1; i < row.cells.length; i++) {
      if (columns[i - 1]) total += Math.pow(10, SEVERITY[kindOf(row.cells[i])] || 0) - 1;
    }
    return total;
  }

  var sorted = "library";

  function sort(columns) {
    var how = form.querySelector("#f-sort").value;
    if (how === "library" && sorted === "library") return;  // the page's own order: nothing to move
    sorted = how;
    rows.forEach(function (row) { row._score = how === "worst" ? score(row, columns) : 0; });
    function key(row) {
      if (how === "worst") return -row._score;
      if (how === "name") return row.dataset.variant;
      return Number(row.dataset.order);
    }
    function compare(a, b) { var x = key(a), y = key(b); return x < y ? -1 : x > y ? 1 : 0; }
    groups.forEach(function (tbody) {
      var members = Array.prototype.slice.call(tbody.querySelectorAll("tr[data-variant]"));
      members.sort(compare).forEach(function (row) { tbody.appendChild(row); });
      tbody._score = members.reduce(function (best, row) { return Math.max(best, row._score); }, 0);
      tbody._order = tbody._order === undefined ? groups.indexOf(tbody) : tbody._order;
    });
    var ordered = groups.slice().sort(function (a, b) {
      if (how === "worst") return b._score - a._score || a._order - b._order;
      if (how === "name") return a.dataset.case < b.dataset.case ? -1 : a.dataset.case > b.dataset.case ? 1 : 0;
      return a._order - b._order;
    });
    ordered.forEach(function (tbody) { matrix.appendChild(tbody); });
  }

  form.hidden = false;
  form.addEventListener("input", apply);
  form.addEventListener("change", apply);
  form.addEventListener("submit", function (event) { event.preventDefault(); });
  form.addEventListener("reset", function () { setTimeout(apply, 0); });
  apply();
  openFromAddress();
  planColumns();
  evidence.then(function () { window.trtReady = Date.now(); }, function () { window.trtReady = Date.now(); });

  // The planning view's columns: a checkbox per release group shows or hides its targets; the default view shows
  // the newest release of each platform line and every observed target; the page says how many are hidden.
  function planColumns() {
    var controls = document.getElementById("plan-columns");
    var plan = document.querySelector("table.plan");
    if (!controls || !plan) return;
    var style = document.head.appendChild(document.createElement("style"));
    var heads = Array.prototype.slice.call(plan.querySelectorAll("thead th.ptarget"));
    var hidden = {};
    function ids(node) { return node.dataset.targets.split(" "); }
    function shownOf(node) { return ids(node).filter(function (id) { return !hidden[id]; }).length; }
    function useDefault() {
      heads.forEach(function (th) { hidden[th.dataset.target] = th.dataset.default !== "1"; });
    }
    function render() {
      var gone = heads.filter(function (th) { return hidden[th.dataset.target]; });
      style.textContent = gone.length ? gone.map(function (th) {
        return 'table.plan [data-target="' + CSS.escape(th.dataset.target) + '"]';
      }).join(",\n") + " { display: none; }" : "";
      plan.querySelectorAll("thead th[data-targets]").forEach(function (th) {
        var shown = shownOf(th);
        th.hidden = shown === 0;
        th.colSpan = Math.max(shown, 1);
      });
      controls.querySelectorAll("input[data-targets]").forEach(function (box) {
        var shown = shownOf(box);
        box.checked = shown === ids(box).length;
        box.indeterminate = shown > 0 && shown < ids(box).length;
      });
      var isDefault = heads.every(function (th) { return !!hidden[th.dataset.target] === (th.dataset.default !== "1"); });
      document.getElementById("plan-hidden-count").textContent = gone.length ?
        gone.length + " of " + heads.length + " targets hidden" + (isDefault ? " (default view)" : "") + ":" :
        "all " + heads.length + " targets shown.";
      document.getElementById("plan-show-all").hidden = !gone.length;
      document.getElementById("plan-default").hidden = isDefault;
    }
    controls.addEventListener("change", function (event) {
      var box = event.target;
      ids(box).forEach(function (id) { hidden[id] = !box.checked; });
      render();
    });
    controls.addEventListener("submit", function (event) { event.preventDefault(); });
    document.getElementById("plan-show-all").addEventListener("click", function () { hidden = {}; render(); });
    document.getElementById("plan-default").addEventListener("click", function () { useDefault(); render(); });
    useDefault();
    render();
    controls.hidden = false;
  }
})();
