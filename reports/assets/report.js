// report.js draws the timeline of a jepsen-lite report from the JSON embedded
// in the page (see timelineJSON in reports/timeline.go) and wires the anomaly
// list to it. Everything is drawn as SVG; at any zoom at most a few elements
// per pixel column are drawn, because short spans that touch are folded into
// one aggregate, except spans that an anomaly names, which are always drawn.
// A long run's timeline (T.summary, reports/summary.go) adds a lane per key
// drawn from per-bucket bars and counts; its worker rows then hold the ops
// of the detail windows, and, when the page is served by `jepsen-lite
// serve`, the full detail of any narrow window, fetched from detail.json.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("report-data").textContent);
  var T = data.timeline, anomalies = data.anomalies || [];
  var S = T.summary || null;
  var KINDS = T.kinds;
  var K = {}; KINDS.forEach(function (k, i) { K[k] = i; });
  var OUT = ["ok", "fail", "info", "open"];
  var runEnd = Math.max(T.end, 1);

  // Layers of a row: 0 holds (hold, maybe-held), 1 ops, 2 writes (with
  // their apply intervals), 3 lease-lost marks.
  function layerOf(kind) {
    if (kind === K.hold || kind === K["maybe-held"]) return 0;
    if (kind === K.write) return 2;
    if (kind === K["lease-lost"]) return 3;
    return 1;
  }
  function sparse(spans, vals) {
    var m = new Map(), at = 0;
    for (var q = 0; q < spans.length; q++) { at += spans[q]; m.set(at, vals[q]); }
    return m;
  }
  // decode reads the spans of a timeline (the page's, or a window's
  // fetched from serve) into the arrays the drawing reads.
  function decode(T) {
    var n = T.s.length, d = { T: T, n: n };
    var start = d.start = new Float64Array(n), end = d.end = new Float64Array(n);
    var code = d.code = new Int32Array(n), I = d.I = new Int32Array(n), J = d.J = new Int32Array(n);
    var t = 0, idx = 0;
    for (var k = 0; k < n; k++) {
      t += T.s[k]; start[k] = t; end[k] = t + T.d[k];
      code[k] = T.c[k];
      idx += T.i[k]; I[k] = idx; J[k] = T.j[k] ? idx + T.j[k] : -1;
    }
    d.marks = sparse(T.ms, T.mv); d.tokens = sparse(T.ts, T.tv); d.errs = sparse(T.es, T.ev);
    // A write's apply interval (the checker's): [lo, hi], hi -1 when it has
    // no end (a write of unknown outcome may take effect any time, or never).
    var applies = d.applies = new Map();
    var at = 0, as = T.as || [];
    for (var q = 0; q < as.length; q++) {
      at += as[q];
      var lo = start[at] + T.al[q];
      applies.set(at, [lo, T.ad[q] < 0 ? -1 : lo + T.ad[q]]);
    }
    d.keys = T.keys ? sparse(T.ks, T.kv) : null;
    d.named = new Set(T.named);
    d.rows = T.rows || [];
    var lists = d.lists = d.rows.map(function () { return [[], [], [], []]; });
    for (k = 0; k < n; k++) lists[code[k] >> 6][layerOf((code[k] >> 2) & 15)].push(k);
    // prefix maxima of ends, to find the first span that reaches a time.
    d.reach = lists.map(function (ls) {
      return ls.map(function (l) {
        var a = new Float64Array(l.length), m = -Infinity;
        for (var q = 0; q < l.length; q++) { m = Math.max(m, reachOfIn(d, l[q])); a[q] = m; }
        return a;
      });
    });
    return d;
  }
  // reachOfIn is how far right a span is drawn: a write's apply interval
  // may run past its completion (to the end, for a write of unknown outcome).
  function reachOfIn(d, k) {
    var ap = d.applies.get(k);
    if (!ap) return d.end[k];
    return Math.max(d.end[k], ap[1] < 0 ? runEnd : ap[1]);
  }
  var base = decode(T), cur = null;
  var n, start, end, code, I, J, marks, tokens, errs, applies, keys, named, rows, lists, reach;
  function reachOf(k) { return reachOfIn(cur, k); }
  var rowOf = function (k) { return code[k] >> 6; };
  var kindOf = function (k) { return (code[k] >> 2) & 15; };
  var outOf = function (k) { return code[k] & 3; };

  var view = { t0: 0, t1: runEnd };
  var selected = null; // Set of op indexes of the selected anomaly
  var selectedNemesis = null;
  var selectedAnomaly = -1;

  var box = document.getElementById("timeline");
  var tip = document.getElementById("tooltip");
  var label = document.getElementById("window-label");
  var GUTTER = 96, RIGHT = 12, AXIS = 22, ROWH = 26, BAND = 14;
  // Band rows under the axis: where the nemesis's availability records say
  // nodes were down, then the checker's liveness windows (one row per kind),
  // then the faults.
  var avail = T.avail || [], liveKinds = [], windows = [];
  // The host records: clock steps and stalls of the harness's own host.
  var host = T.host || [];
  anomalies.forEach(function (a, q) {
    if (!a.window) return;
    var r = liveKinds.indexOf(a.kind);
    if (r < 0) { r = liveKinds.length; liveKinds.push(a.kind); }
    windows.push({ s: a.window[0], e: a.window[1], kind: a.kind, key: a.key, msg: a.message, q: q, row: r });
  });
  var AVROW = avail.length ? BAND : 0;
  var TOP = AXIS + AVROW + liveKinds.length * BAND;
  // Nemesis bands: overlapping faults get their own band row above the lanes.
  var nemesis = T.nemesis || [], bandEnds = [];
  // A long run's faults get a band row per class instead.
  var classes = [];
  var bandOf = nemesis.map(function (nv) {
    if (S) {
      var c = classes.indexOf(nv.c);
      if (c < 0) { c = classes.length; classes.push(nv.c); bandEnds[c] = 0; }
      return c;
    }
    for (var b = 0; b < bandEnds.length; b++) if (bandEnds[b] <= nv.s) break;
    bandEnds[b] = Math.max(nv.e, nv.s + runEndGuess() * 0.06);
    return b;
  });
  function runEndGuess() { return Math.max(T.end, 1); }
  var NEMROW = nemesis.length ? bandEnds.length * BAND + 4 : 0;
  // A long run's key lanes come next, then the worker rows.
  var LANEH = 30, SUMTOP = TOP + NEMROW, SUMH = S ? S.lanes.length * LANEH + 10 : 0;
  var rowY = [], height = 0;
  // setData draws the rows of the dataset d from now on.
  function setData(d) {
    cur = d; n = d.n; start = d.start; end = d.end; code = d.code; I = d.I; J = d.J;
    marks = d.marks; tokens = d.tokens; errs = d.errs; applies = d.applies; keys = d.keys;
    named = d.named; rows = d.rows; lists = d.lists; reach = d.reach;
    // A worker's first row gets a gap above it so lanes read as groups.
    var y = SUMTOP + SUMH;
    rowY = [];
    rows.forEach(function (r, i) {
      if (i > 0 && rows[i - 1].w !== r.w) y += 6;
      rowY.push(y); y += ROWH;
    });
    height = y + 4;
  }
  setData(base);

  function fmtS(us) {
    var s = us / 1e6, span = (view.t1 - view.t0) / 1e6, d = 3;
    if (span < 0.05) d = 6; else if (span < 0.5) d = 4;
    return s.toFixed(d) + "s";
  }
  function fmtDur(us) {
    if (us >= 1e6) return (us / 1e6).toFixed(3) + "s";
    if (us >= 1e3) return (us / 1e3).toFixed(1) + "ms";
    return us + "µs";
  }
  function esc(s) {
    return String(s).replace(/[&<>"]/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c];
    });
  }
  function niceStep(span, count) {
    var raw = span / count, p = Math.pow(10, Math.floor(Math.log10(raw)));
    var m = [1, 2, 5, 10].find(function (x) { return x * p >= raw; });
    return m * p;
  }
  function lowerBound(a, v) {
    var lo = 0, hi = a.length;
    while (lo < hi) { var mid = (lo + hi) >> 1; if (a[mid] < v) lo = mid + 1; else hi = mid; }
    return lo;
  }

  // A long run's key lanes: each lane's bars (holds, maybe-held spans) and
  // completion counts per bucket, decoded from T.summary.
  var lanesData = S ? S.lanes.map(function (l) {
    function bars(b) {
      var out = [], bk = 0, i = 0;
      for (var q = 0; q < b.b.length; q++) {
        bk += b.b[q]; i += b.i[q];
        var lo = bk * S.w + b.s[q];
        out.push({ lo: lo, hi: lo + b.d[q], n: b.n[q], o: b.o[q], u: b.u[q], i: i, j: i + b.j[q] });
      }
      return out;
    }
    var counts = [], bk = 0, peak = 1;
    for (var q = 0; q < l.cb.length; q++) {
      bk += l.cb[q];
      var c = { b: bk, ok: l.c[0][q], fail: l.c[1][q], info: l.c[2][q], lost: l.c[3][q] };
      peak = Math.max(peak, c.ok + c.fail + c.info);
      counts.push(c);
    }
    return { key: l.key, keys: l.keys, holds: bars(l.holds), maybe: bars(l.maybe), counts: counts, peak: peak };
  }) : [];
  // drawLanes draws the key lanes of a long run into out.
  function drawLanes(out, X, t0, t1, W) {
    lanesData.forEach(function (l, li) {
      var ly = SUMTOP + li * LANEH;
      [["holds", "hold sum-bar"], ["maybe", "hold k-maybe-held sum-bar"]].forEach(function (kb) {
        l[kb[0]].forEach(function (b, q) {
          if (b.hi < t0 || b.lo > t1) return;
          var x0 = X(b.lo), x1 = X(b.hi), op = b.hi > b.lo ? 0.35 + 0.65 * Math.min(1, b.u / (b.hi - b.lo)) : 1;
          out.push('<rect class="' + kb[1] + '" data-bar="' + li + ' ' + kb[0] + ' ' + q + '" x="' + x0 + '" y="' + (ly + 3) + '" width="' + Math.max(x1 - x0, 1.5) +
            '" height="9"' + (kb[0] === "holds" ? ' fill-opacity="' + op.toFixed(2) + '"' : '') + '/>');
        });
      });
      // completions per bucket, stacked: ok, fail, info; lease-lost as a tick
      var paths = { ok: "", fail: "", info: "", lost: "" }, base = ly + LANEH - 3, H = 13;
      l.counts.forEach(function (c) {
        var a = c.b * S.w, b = a + S.w;
        if (b < t0 || a > t1) return;
        var x0 = X(a), wd = Math.max(X(b) - x0, 0.8), y = base;
        ["ok", "fail", "info"].forEach(function (o) {
          if (!c[o]) return;
          var h = Math.max(c[o] / l.peak * H, 0.8);
          paths[o] += "M" + x0.toFixed(1) + " " + y.toFixed(1) + "h" + wd.toFixed(1) + "v-" + h.toFixed(1) + "h-" + wd.toFixed(1) + "z";
          y -= h;
        });
        if (c.lost) paths.lost += "M" + (x0 + wd / 2).toFixed(1) + " " + (ly + 13) + "v4";
      });
      ["ok", "fail", "info"].forEach(function (o) {
        if (paths[o]) out.push('<path class="sum-count o-' + o + '" d="' + paths[o] + '"/>');
      });
      if (paths.lost) out.push('<path class="sum-lost" d="' + paths.lost + '"/>');
      out.push('<rect class="sum-strip" data-lane="' + li + '" x="0" y="' + (ly + 13) + '" width="' + W + '" height="' + (LANEH - 14) + '"/>');
    });
    // where the worker rows hold the full detail
    var marks = (S.detail || []).map(function (e) { return [e[0], e[1], "detail-mark"]; });
    if (fetched) marks.push([fetched.t0, fetched.t1, "detail-mark served"]);
    marks.forEach(function (m) {
      if (m[1] < t0 || m[0] > t1) return;
      var x0 = X(m[0]), x1 = X(m[1]);
      out.push('<rect class="' + m[2] + '" x="' + x0 + '" y="' + (SUMTOP + SUMH - 7) + '" width="' + Math.max(x1 - x0, 2) + '" height="4"><title>' +
        (m[2] === "detail-mark" ? "ops around an anomaly: drawn in full detail in the worker rows" : "loaded from the stored history: drawn in full detail in the worker rows") + '</title></rect>');
    });
  }
  // laneLabels draws the key lanes' labels in the gutter.
  function laneLabels(out, W) {
    lanesData.forEach(function (l, li) {
      var ly = SUMTOP + li * LANEH;
      out.push('<rect class="lane-bg sum-lane' + (li % 2 ? " odd" : "") + '" x="0" y="' + ly + '" width="' + W + '" height="' + LANEH + '"/>');
      out.push('<text class="lane-label" x="6" y="' + (ly + 12) + '">key ' + esc(l.key) + (l.keys > 1 ? " +" + (l.keys - 1) : "") + '</text>');
      out.push('<text class="lane-procs" x="6" y="' + (ly + 24) + '">summary</text>');
    });
  }
  // barText and countText are the tooltips of a bar and of a bucket.
  function barText(li, kind, q) {
    var b = lanesData[li][kind][q], what = kind === "holds" ? "hold" : "maybe-held span";
    var lines = ["<b>" + b.n + " " + what + (b.n === 1 ? "" : "s") + "</b> · key " + esc(lanesData[li].key),
      "from " + fmtS(b.lo) + " to " + fmtS(b.hi) + " (" + fmtDur(b.hi - b.lo) + ")",
      "union: " + fmtDur(b.u) + (b.hi > b.lo ? " (" + (100 * b.u / (b.hi - b.lo)).toFixed(0) + "% of it)" : ""),
      "ops " + b.i + (b.j !== b.i ? " … " + b.j : "")];
    if (b.o) lines.push(b.o + " never ended");
    lines.push("zoom in for the detail" + (served ? "" : " (served by jepsen-lite serve)"));
    return lines.join("<br>");
  }
  function countText(li, tt) {
    var l = lanesData[li], bk = Math.floor(tt / S.w);
    var c = l.counts[lowerBoundBy(l.counts, bk)];
    if (!c || c.b !== bk) return "no completions in " + fmtS(bk * S.w) + " – " + fmtS((bk + 1) * S.w);
    return "<b>completions</b> · key " + esc(l.key) + "<br>" + fmtS(bk * S.w) + " – " + fmtS((bk + 1) * S.w) +
      "<br>" + c.ok + " ok, " + c.fail + " fail, " + c.info + " info" + (c.lost ? ", " + c.lost + " lease-lost" : "");
  }
  function lowerBoundBy(a, bk) {
    var lo = 0, hi = a.length;
    while (lo < hi) { var mid = (lo + hi) >> 1; if (a[mid].b < bk) lo = mid + 1; else hi = mid; }
    return lo;
  }

  // The full detail of a window, fetched from serve's detail.json when the
  // view is narrower than the summary's resolution shows and holds few
  // enough ops; a page opened as a file shows the summary and the anomaly
  // windows.
  var served = !!S && /^https?:$/.test(location.protocol);
  var fetched = null, fetchFailed = false, fetchTimer = null, fetching = false;
  function opsIn(a, b) {
    var total = 0;
    lanesData.forEach(function (l) {
      for (var q = lowerBoundBy(l.counts, Math.floor(a / S.w)); q < l.counts.length && l.counts[q].b * S.w <= b; q++) {
        var c = l.counts[q];
        total += 2 * (c.ok + c.fail + c.info + c.lost);
      }
    });
    return total;
  }
  function wantDetail(plotW) {
    if (!served || fetchFailed) return null;
    var t0 = view.t0, t1 = view.t1;
    if (fetched && fetched.t0 <= t0 && fetched.t1 >= t1) return null;
    if ((t1 - t0) / S.w > plotW / 4 || opsIn(t0, t1) > S.serveOps / 2) return null;
    var pad = (t1 - t0) / 2, a = Math.max(0, t0 - pad), b = Math.min(runEnd, t1 + pad);
    if (opsIn(a, b) > S.serveOps / 2) { a = t0; b = t1; }
    return [Math.floor(a), Math.ceil(b)];
  }
  function fetchDetail(plotW) {
    var w = wantDetail(plotW);
    clearTimeout(fetchTimer);
    if (!w) return;
    fetchTimer = setTimeout(function () {
      fetching = true;
      fetch("detail.json?from=" + w[0] + "&to=" + w[1]).then(function (r) {
        if (!r.ok) throw new Error("detail.json: " + r.status);
        return r.json();
      }).then(function (T2) {
        fetched = { t0: w[0], t1: w[1], ds: decode(T2), more: !!T2.more };
      }).catch(function () { fetchFailed = true; }).then(function () { fetching = false; schedule(); });
    }, 150);
  }
  function detailWord() {
    if (!S) return "";
    if (cur !== base) return " · full detail loaded from the stored history" + (fetched.more ? " (its first " + S.serveOps + " ops)" : "");
    if (fetching) return " · loading the detail…";
    if (served && !fetchFailed) return " · zoom in to load the full detail";
    return "";
  }

  // drawHost draws each host record within [t0, t1] across the lanes, apart
  // from the faults: a clock step as a line where the watch saw it, a stall
  // as the stretch it lasted.
  function drawHost(out, X, clampX, t0, t1) {
    host.forEach(function (hv) {
      if (hv.e < t0 || hv.s > t1) return;
      var title = '<title>' + esc(hv.t) + '</title>';
      if (hv.k === "clock-step") {
        var x = clampX(X(hv.e));
        out.push('<line class="host-step" x1="' + x + '" x2="' + x + '" y1="' + AXIS + '" y2="' + height + '">' + title + '</line>');
        return;
      }
      var x0 = clampX(X(hv.s)), x1 = clampX(X(hv.e));
      out.push('<rect class="host-stall" x="' + x0 + '" y="' + AXIS + '" width="' + Math.max(x1 - x0, 2) + '" height="' + (height - AXIS) + '">' + title + '</rect>');
    });
  }
  // drawLate marks on a fault's band row, hatched, the stretch from a step's
  // due time to the time it took effect: a fault or heal late beyond the
  // nemesis's tolerance (docs/history.md §1, "Steps that did not run as
  // written").
  function drawLate(out, from, to, by, X, clampX, what) {
    var x0 = clampX(X(from)), x1 = clampX(X(to));
    out.push('<rect class="nem-late" x="' + x0 + '" y="' + by + '" width="' + Math.max(x1 - x0, 2) + '" height="' + (BAND - 2) + '"><title>' + esc(what) + '</title></rect>');
  }
  // drawFault draws the fault nemesis[q]: shaded across the lanes, and on
  // its band row; a step not run as a dotted line, a late one with its
  // lateness hatched (drawLate).
  function drawFault(out, q, X, clampX) {
    var nv = nemesis[q], by = TOP + bandOf[q] * BAND;
    var hl = selectedNemesis && (selectedNemesis.has(nv.i) || selectedNemesis.has(nv.j)) ? " highlight" : "";
    var title = esc(nv.f + (nv.v ? " " + nv.v : "") + " — " + fmtS(nv.s) + (nv.pt ? "" : " → " + (nv.open ? "end (never healed)" : fmtS(nv.e))));
    var di = ' data-index="' + nv.i + (nv.j >= 0 ? " " + nv.j : "") + '" data-nemesis="' + q + '"';
    if (nv.late) drawLate(out, nv.s - nv.late, nv.s, by, X, clampX, nv.f + " took effect " + fmtDur(nv.late) + " after its time");
    // A heal due before its fault took effect is hatched from the fault on.
    if (nv.hlate) drawLate(out, Math.max(nv.e - nv.hlate, nv.s), nv.e, by, X, clampX, "the heal of " + nv.f + " took effect " + fmtDur(nv.hlate) + " after its time");
    if (nv.pt) {
      var xp = X(nv.s);
      out.push('<line class="nemesis-point nem-' + nv.c + (nv.nr ? " not-run" : "") + hl + '"' + di + ' x1="' + xp + '" x2="' + xp + '" y1="' + AXIS + '" y2="' + height + '"><title>' + title + '</title></line>');
      out.push('<text class="nem-label" x="' + (xp + 3) + '" y="' + (by + 10) + '">' + esc(nv.f + (nv.nr ? " (not run)" : "")) + '</text>');
      return;
    }
    var x0 = clampX(X(nv.s)), x1 = clampX(X(nv.e));
    out.push('<rect class="nemesis nem-' + nv.c + (nv.open ? " open" : "") + hl + '"' + di + ' x="' + x0 + '" y="' + AXIS + '" width="' + Math.max(x1 - x0, 2) + '" height="' + (height - AXIS) + '"><title>' + title + '</title></rect>');
    out.push('<rect class="nem-band nem-' + nv.c + '" x="' + x0 + '" y="' + by + '" width="' + Math.max(x1 - x0, 2) + '" height="' + (BAND - 2) + '"/>');
    if (x1 - x0 > 30) out.push('<text class="nem-label" x="' + (Math.max(x0, GUTTER) + 3) + '" y="' + (by + 10) + '">' + esc(nv.f + (nv.open ? " (never healed)" : "")) + '</text>');
  }
  // drawFaultsMerged draws the faults of a long run: those of one class
  // less than a pixel apart are drawn as one shape that says how many it
  // holds (zoom in to see each); none is left out.
  function drawFaultsMerged(out, X, clampX, t0, t1) {
    var open = {};
    function flush(c) {
      var m = open[c];
      if (!m) return;
      delete open[c];
      if (m.qs.length === 1) { drawFault(out, m.qs[0], X, clampX); return; }
      var first = nemesis[m.qs[0]], names = [], hl = "", last = first.s;
      m.qs.forEach(function (q) {
        var nv = nemesis[q];
        if (names.indexOf(nv.f) < 0) names.push(nv.f);
        if (selectedNemesis && (selectedNemesis.has(nv.i) || selectedNemesis.has(nv.j))) hl = " highlight";
        last = Math.max(last, nv.pt ? nv.s : nv.e);
      });
      var x0 = clampX(m.x0), x1 = clampX(m.x1), by = TOP + bandOf[m.qs[0]] * BAND, wd = Math.max(x1 - x0, 2);
      var title = esc(m.qs.length + " faults (" + names.join(", ") + ") from " + fmtS(first.s) + " to " + fmtS(last) + ": zoom in to see each");
      out.push('<rect class="nemesis nem-' + c + ' merged' + hl + '" data-faults="' + m.qs.length + '" x="' + x0 + '" y="' + AXIS + '" width="' + wd + '" height="' + (height - AXIS) + '"><title>' + title + '</title></rect>');
      out.push('<rect class="nem-band nem-' + c + '" x="' + x0 + '" y="' + by + '" width="' + wd + '" height="' + (BAND - 2) + '"/>');
    }
    nemesis.forEach(function (nv, q) {
      if (nv.e < t0 || nv.s > t1) return;
      var x0 = X(nv.s), x1 = nv.pt ? x0 : X(nv.e), m = open[nv.c];
      if (m && x0 <= m.x1 + 1) { m.x1 = Math.max(m.x1, x1); m.qs.push(q); return; }
      flush(nv.c);
      open[nv.c] = { x0: x0, x1: x1, qs: [q] };
    });
    Object.keys(open).forEach(flush);
  }

  function render() {
    if (S) setData(fetched && fetched.t0 <= view.t0 && fetched.t1 >= view.t1 ? fetched.ds : base);
    var W = Math.max(box.clientWidth, 400), plotW = W - GUTTER - RIGHT;
    var t0 = view.t0, t1 = view.t1, scale = plotW / (t1 - t0);
    var X = function (tt) { return GUTTER + (tt - t0) * scale; };
    var clampX = function (x) { return Math.max(GUTTER - 2, Math.min(W - RIGHT + 2, x)); };
    var out = [];
    out.push('<svg xmlns="http://www.w3.org/2000/svg" width="' + W + '" height="' + height + '" class="tl">');
    out.push('<defs><pattern id="hatch-maybe" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(-45)"><line x1="0" y1="0" x2="0" y2="6" class="maybe-line"/></pattern>' +
      '<pattern id="hatch-late" width="5" height="5" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><line x1="0" y1="0" x2="0" y2="5" class="late-line"/></pattern>' +
      '<clipPath id="plot-clip"><rect x="' + GUTTER + '" y="0" width="' + plotW + '" height="' + height + '"/></clipPath></defs>');
    // lane backgrounds and labels
    rows.forEach(function (r, i) {
      var first = i === 0 || rows[i - 1].w !== r.w;
      out.push('<rect class="lane-bg' + (i % 2 ? " odd" : "") + '" x="0" y="' + rowY[i] + '" width="' + W + '" height="' + ROWH + '"/>');
      var procs = r.p.length > 3 ? r.p.slice(0, 3).join(",") + ",… (" + r.p.length + ")" : r.p.join(",");
      out.push('<text class="lane-label" x="6" y="' + (rowY[i] + 12) + '">' + (first ? "worker " + r.w : "  ↳ after crash") + '</text>');
      out.push('<text class="lane-procs" x="6" y="' + (rowY[i] + 23) + '"><title>processes ' + esc(r.p.join(", ")) + '</title>p' + esc(procs) + '</text>');
    });
    if (S) laneLabels(out, W);
    out.push('<g clip-path="url(#plot-clip)">');
    // nodes down, by the availability records
    avail.forEach(function (b) {
      if (b.e < t0 || b.s > t1) return;
      var x0 = clampX(X(b.s)), x1 = clampX(X(b.e));
      var text = b.down.join(",") + " down (" + (b.n - b.down.length) + " of " + b.n + " up" + (b.maj ? ")" : ": no majority)");
      out.push('<rect class="avail-band ' + (b.maj ? "avail-maj" : "avail-min") + '" data-index="' + b.i + '" x="' + x0 + '" y="' + AXIS + '" width="' + Math.max(x1 - x0, 2) + '" height="' + (BAND - 2) + '"><title>' +
        esc(text + " — " + fmtS(b.s) + " → " + fmtS(b.e)) + '</title></rect>');
      if (x1 - x0 > 30) out.push('<text class="nem-label" x="' + (Math.max(x0, GUTTER) + 3) + '" y="' + (AXIS + 10) + '">' + esc(text) + '</text>');
    });
    // the checker's liveness windows, shaded across the lanes
    windows.forEach(function (w) {
      if (w.e < t0 || w.s > t1) return;
      var x0 = clampX(X(w.s)), x1 = clampX(X(w.e)), by = AXIS + AVROW + w.row * BAND, wd = Math.max(x1 - x0, 2);
      var hl = selectedAnomaly === w.q ? " highlight" : "";
      var title = esc(w.kind + (w.key ? " " + w.key : "") + " " + fmtS(w.s) + " → " + fmtS(w.e) + ": " + w.msg);
      out.push('<rect class="live-window live-' + esc(w.kind) + '" data-anomaly="' + w.q + '" x="' + x0 + '" y="' + by + '" width="' + wd + '" height="' + (height - by) + '"><title>' + title + '</title></rect>');
      out.push('<rect class="live-band live-' + esc(w.kind) + hl + '" data-anomaly="' + w.q + '" x="' + x0 + '" y="' + by + '" width="' + wd + '" height="' + (BAND - 2) + '"><title>' + title + '</title></rect>');
      if (x1 - x0 > 30) out.push('<text class="nem-label" x="' + (Math.max(x0, GUTTER) + 3) + '" y="' + (by + 10) + '">' + esc(w.kind + (w.key ? " " + w.key : "")) + '</text>');
    });
    // nemesis shading
    if (S) drawFaultsMerged(out, X, clampX, t0, t1);
    else nemesis.forEach(function (nv, q) { if (nv.e >= t0 && nv.s <= t1) drawFault(out, q, X, clampX); });
    drawHost(out, X, clampX, t0, t1);
    if (S) drawLanes(out, X, t0, t1, W);
    // spans
    var drawn = 0, folded = 0;
    function spanAttrs(k) {
      var di = I[k] + (J[k] >= 0 ? " " + J[k] : "");
      var cls = "";
      if (named.has(k)) cls += " anom";
      if (selected && (selected.has(I[k]) || (J[k] >= 0 && selected.has(J[k])))) cls += " highlight";
      return { di: di, cls: cls };
    }
    function geometry(layer, kind, ry) {
      if (layer === 0) {
        if (kind === K["maybe-held"]) return [ry + 3, 9];
        return [ry + 3, 9];
      }
      if (kind === K.acquire) return [ry + 14, 8];
      return [ry + 16, 4];
    }
    function drawSpan(k, ry, layer) {
      var kind = kindOf(k), o = outOf(k), a = spanAttrs(k);
      var x0 = X(start[k]), x1 = X(end[k]);
      var common = ' data-span="' + k + '" data-index="' + a.di + '"';
      drawn++;
      if (layer === 2) { // write: its op, and the checker's apply interval
        out.push('<rect class="op o-' + OUT[o] + ' k-write' + a.cls + '"' + common + ' x="' + x0 + '" y="' + (ry + 16) + '" width="' + Math.max(x1 - x0, 1.5) + '" height="4"/>');
        var ap = applies.get(k);
        if (!ap) return;
        var xl = X(ap[0]);
        if (ap[1] === ap[0]) { // exact: a tick at the moment
          out.push('<line class="tick-line o-' + OUT[o] + a.cls + '"' + common + ' x1="' + xl + '" x2="' + xl + '" y1="' + (ry + 2) + '" y2="' + (ry + ROWH - 2) + '"/>');
          return;
        }
        var open = ap[1] < 0, xh = X(open ? runEnd : ap[1]), ya = ry + 13.5;
        var d = 'M' + xl + ' ' + (ya - 3) + 'v6M' + xl + ' ' + ya + 'H' + xh + (open ? 'm-4 -3l4 3 -4 3' : 'm0 -3v6');
        out.push('<path class="apply-window o-' + OUT[o] + (open ? " open" : "") + a.cls + '"' + common + ' d="' + d + '"><title>' +
          (open ? "may take effect any time from " + fmtS(ap[0]) + " on, or never" : "took effect between " + fmtS(ap[0]) + " and " + fmtS(ap[1])) + '</title></path>');
        return;
      }
      if (layer === 3) {
        out.push('<path class="lost' + a.cls + '"' + common + ' d="M' + x0 + ' ' + (ry + 3) + 'l4 5 -4 5 -4 -5z"/>');
        return;
      }
      var g = geometry(layer, kind, ry), w = Math.max(x1 - x0, 1.5);
      var cls = layer === 0 ? "hold k-" + KINDS[kind] : "op o-" + OUT[o] + " k-" + KINDS[kind];
      var neverEnded = kind === K.hold && o === 3;
      out.push('<rect class="' + cls + (neverEnded ? " open" : "") + a.cls + '"' + common + ' x="' + x0 + '" y="' + g[0] + '" width="' + w + '" height="' + g[1] + '"/>');
      if (neverEnded) { // an arrow at the end: nothing ended this belief
        out.push('<path class="hold-open' + a.cls + '"' + common + ' d="M' + (x1 - 7) + ' ' + (ry + 1) + 'l7 6.5 -7 6.5z"><title>never ended: no release, lease-lost, crash, re-acquisition or until</title></path>');
      }
      if (kind === K.hold && marks.has(k)) { // until: the end of the client's own validity
        var xu = X(marks.get(k));
        if (xu > x1 + 1) out.push('<line class="validity' + a.cls + '" x1="' + x1 + '" x2="' + xu + '" y1="' + (ry + 7.5) + '" y2="' + (ry + 7.5) + '"/>');
        out.push('<path class="until' + a.cls + '" d="M' + xu + ' ' + (ry + 1) + 'v13m-3 -13h6"><title>until ' + fmtS(marks.get(k)) + '</title></path>');
      }
      if (kind === K.acquire && o === 2 && x1 - x0 > 8) { // info: crashed
        out.push('<text class="crash" x="' + (x1 - 3) + '" y="' + (ry + 22) + '">✕</text>');
      }
    }
    rows.forEach(function (r, ri) {
      var ry = rowY[ri];
      for (var layer = 0; layer < 4; layer++) {
        var l = lists[ri][layer], rc = reach[ri][layer];
        var aggs = {}; // fold class -> [x0, x1, count, firstSpan]
        var flush = function (key) {
          var a = aggs[key]; if (!a) return;
          delete aggs[key];
          if (a[2] === 1) { drawSpan(a[3], ry, layer); return; }
          folded += a[2]; drawn++;
          var parts = key.split("|"), g = geometry(layer, +parts[1], ry);
          var cls = layer === 0 ? "hold agg k-" + KINDS[+parts[1]] : layer === 2 ? "agg-tick o-" + OUT[+parts[0]] : "op agg o-" + OUT[+parts[0]];
          if (layer === 2) g = [ry + 2, ROWH - 4];
          out.push('<rect class="' + cls + '" data-agg="' + a[2] + '" x="' + a[0] + '" y="' + g[0] + '" width="' + Math.max(a[1] - a[0], 1.5) + '" height="' + g[1] + '"><title>' + a[2] + ' ops folded; zoom in to see them</title></rect>');
        };
        for (var q = lowerBound(rc, t0); q < l.length; q++) {
          var k2 = l[q];
          if (start[k2] > t1) break;
          if (reachOf(k2) < t0) continue;
          if (named.has(k2)) { drawSpan(k2, ry, layer); continue; }
          var x0 = X(start[k2]), x1 = X(end[k2]);
          if (layer === 2 && applies.has(k2)) {
            var ap2 = applies.get(k2);
            x0 = Math.min(x0, X(ap2[0])); x1 = Math.max(x1, X(ap2[1] < 0 ? runEnd : ap2[1]));
          }
          var kind = kindOf(k2);
          var key = (layer === 0 ? 0 : outOf(k2)) + "|" + (layer === 0 ? kind : (kind === K.acquire ? K.acquire : K.read));
          var a = aggs[key];
          if (a && x0 <= a[1] + 1 && (x1 - x0 < 3 || a[1] - a[0] < 3)) { a[1] = Math.max(a[1], x1); a[2]++; continue; }
          if (a) flush(key);
          aggs[key] = [x0, x1, 1, k2];
        }
        Object.keys(aggs).forEach(flush);
      }
    });
    out.push('</g>');
    // time axis
    var step = niceStep(t1 - t0, Math.max(2, Math.floor(plotW / 110)));
    out.push('<rect class="axis-bg" x="0" y="0" width="' + W + '" height="' + AXIS + '"/>');
    for (var tt = Math.ceil(t0 / step) * step; tt <= t1; tt += step) {
      var xa = X(tt);
      out.push('<line class="axis-grid" x1="' + xa + '" x2="' + xa + '" y1="' + (AXIS - 5) + '" y2="' + height + '"/>');
      out.push('<text class="axis-tick" x="' + xa + '" y="' + (AXIS - 8) + '" text-anchor="middle">' + fmtS(tt) + '</text>');
    }
    out.push('<text class="axis-tick" x="6" y="' + (AXIS - 8) + '">time (s)</text>');
    out.push('</svg>');
    box.innerHTML = out.join("");
    box.dataset.drawn = drawn;
    box.dataset.folded = folded;
    label.textContent = "showing " + fmtS(t0) + " – " + fmtS(t1) + " of " + (runEnd / 1e6).toFixed(3) + "s" +
      (folded ? " · " + folded + " short ops folded (zoom in to separate them)" : "") + detailWord();
    if (S) fetchDetail(plotW);
  }

  var pending = false;
  function schedule() {
    if (pending) return;
    pending = true;
    requestAnimationFrame(function () { pending = false; render(); });
  }
  function setView(a, b) {
    var span = Math.max(b - a, 20);
    var full = runEnd * 1.02;
    if (span > full) span = full;
    if (a < 0) a = 0;
    if (a + span > full) a = full - span;
    view.t0 = a; view.t1 = a + span;
    schedule();
  }
  function zoom(factor, at) {
    if (at === undefined) at = (view.t0 + view.t1) / 2;
    setView(at - (at - view.t0) * factor, at + (view.t1 - at) * factor);
  }
  function timeAt(clientX) {
    var r = box.getBoundingClientRect(), W = Math.max(box.clientWidth, 400);
    var f = (clientX - r.left - GUTTER) / (W - GUTTER - RIGHT);
    return view.t0 + Math.max(0, Math.min(1, f)) * (view.t1 - view.t0);
  }
  box.addEventListener("wheel", function (e) {
    e.preventDefault();
    zoom(e.deltaY > 0 ? 1.25 : 0.8, timeAt(e.clientX));
  }, { passive: false });
  var drag = null;
  box.addEventListener("pointerdown", function (e) {
    drag = { x: e.clientX, t0: view.t0, t1: view.t1 };
    box.setPointerCapture(e.pointerId);
    box.classList.add("dragging");
  });
  box.addEventListener("pointermove", function (e) {
    if (drag) {
      var W = Math.max(box.clientWidth, 400);
      var dt = (e.clientX - drag.x) / (W - GUTTER - RIGHT) * (drag.t1 - drag.t0);
      setView(drag.t0 - dt, drag.t1 - dt);
      return;
    }
    showTip(e);
  });
  box.addEventListener("pointerup", function () { drag = null; box.classList.remove("dragging"); });
  box.addEventListener("pointerleave", function () { tip.hidden = true; });
  document.getElementById("zoom-in").onclick = function () { zoom(0.5); };
  document.getElementById("zoom-out").onclick = function () { zoom(2); };
  document.getElementById("zoom-fit").onclick = function () { setView(0, runEnd); };
  document.getElementById("pan-left").onclick = function () { var d = (view.t1 - view.t0) / 3; setView(view.t0 - d, view.t1 - d); };
  document.getElementById("pan-right").onclick = function () { var d = (view.t1 - view.t0) / 3; setView(view.t0 + d, view.t1 + d); };
  window.addEventListener("resize", schedule);

  function showTip(e) {
    var bar = e.target.closest ? e.target.closest("[data-bar],[data-lane]") : null;
    if (bar) {
      var bp = (bar.dataset.bar || "").split(" ");
      placeTip(e, bar.dataset.bar ? barText(+bp[0], bp[1], +bp[2]) : countText(+bar.dataset.lane, timeAt(e.clientX)));
      return;
    }
    var el = e.target.closest ? e.target.closest("[data-span]") : null;
    if (!el) { tip.hidden = true; return; }
    var k = +el.dataset.span, kind = KINDS[kindOf(k)], r = rows[rowOf(k)];
    var lines = [];
    var head = kind === "hold" ? (outOf(k) === 3 ? "held the lock (never ended)" : "held the lock") :
      kind === "maybe-held" ? "may hold the lock (acquire of unknown outcome)" : kind + " " + OUT[outOf(k)];
    lines.push("<b>" + esc(head) + "</b> · worker " + r.w);
    lines.push(fmtS(start[k]) + " → " + fmtS(end[k]) + " (" + fmtDur(end[k] - start[k]) + ")");
    lines.push("ops " + I[k] + (J[k] >= 0 ? ", " + J[k] : ""));
    if (keys && keys.has(k)) lines.push("key " + esc(cur.T.keys[keys.get(k)]));
    if (tokens.has(k)) lines.push("token " + tokens.get(k));
    if (marks.has(k)) lines.push("until " + fmtS(marks.get(k)));
    if (kind === "write") {
      var ap = applies.get(k);
      if (!ap) lines.push("took no effect");
      else if (ap[1] === ap[0]) lines.push((outOf(k) === 1 ? "rejected at " : "applied at ") + fmtS(ap[0]));
      else if (ap[1] < 0) lines.push("may take effect any time from " + fmtS(ap[0]) + " on, or never");
      else lines.push("took effect between " + fmtS(ap[0]) + " and " + fmtS(ap[1]));
    }
    if (errs.has(k)) lines.push("error: " + esc(cur.T.errors[errs.get(k)]));
    placeTip(e, lines.join("<br>"));
  }
  function placeTip(e, html) {
    tip.innerHTML = html;
    tip.hidden = false;
    var bx = box.getBoundingClientRect();
    tip.style.left = Math.min(e.clientX - bx.left + 14, bx.width - 260) + "px";
    tip.style.top = (e.clientY - bx.top + box.offsetTop + 14) + "px";
  }

  // Anomalies and margins: a click zooms to the ops they name and
  // highlights them.
  function zoomTo(a) {
    if (a.from >= 0) {
      var w = Math.max(a.to - a.from, 1000), pad = Math.max(w * 0.25, 2000);
      setView(a.from - pad, a.to + pad);
    } else schedule();
    render(); pending = false; // draw now, so the DOM reflects the selection
    document.querySelector(".timeline-section").scrollIntoView({ behavior: "auto", block: "start" });
  }
  function selectAnomaly(q) {
    var a = anomalies[q];
    if (!a) return;
    selected = new Set(a.ops);
    selectedNemesis = selected;
    selectedAnomaly = q;
    document.querySelectorAll("li.anomaly").forEach(function (li) {
      li.classList.toggle("selected", +li.dataset.anomaly === q);
    });
    document.querySelectorAll(".tasks [data-anomaly]").forEach(function (el) {
      el.classList.toggle("selected", +el.dataset.anomaly === q);
    });
    zoomTo(a);
  }
  var margins = data.margins || [];
  function selectMargin(q) {
    var m = margins[q];
    if (!m) return;
    selected = new Set(m.ops);
    selectedNemesis = selected;
    selectedAnomaly = -1;
    document.querySelectorAll("li.anomaly.selected, .tasks .selected").forEach(function (el) { el.classList.remove("selected"); });
    zoomTo(m);
  }
  document.querySelectorAll("[data-margin]").forEach(function (el) {
    el.addEventListener("click", function () { selectMargin(+el.dataset.margin); });
    el.addEventListener("keydown", function (e) { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); selectMargin(+el.dataset.margin); } });
  });
  // An anomaly's mark in the task view selects it too.
  document.querySelectorAll(".tasks [data-anomaly]").forEach(function (el) {
    el.addEventListener("click", function () { selectAnomaly(+el.dataset.anomaly); });
  });
  document.querySelectorAll("li.anomaly").forEach(function (li) {
    li.addEventListener("click", function () { selectAnomaly(+li.dataset.anomaly); });
    li.addEventListener("keydown", function (e) { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); selectAnomaly(+li.dataset.anomaly); } });
  });
  if (!rows.length && !S) {
    box.innerHTML = '<p class="none">No client ops in this history.</p>';
  } else {
    render();
  }
  window.jepsenLiteReport = { selectAnomaly: selectAnomaly, selectMargin: selectMargin, setView: setView, view: view, render: render,
    detail: function () { return fetched && { t0: fetched.t0, t1: fetched.t1, spans: fetched.ds.n, shown: cur === fetched.ds }; } };
})();
