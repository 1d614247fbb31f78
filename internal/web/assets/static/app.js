// weir's dashboard: polls /v1/job and /v1/checkpoints once a second and
// redraws. Hand-written, no dependencies; every job-provided string goes
// into the page through textContent, never as markup.
"use strict";

(function () {
  const POLL_MS = 1000;
  const SVG = "http://www.w3.org/2000/svg";
  const END = 9e15; // watermarks at or above this mean "input ended" (int64 max in JSON)

  const $ = (id) => document.getElementById(id);

  function el(tag, attrs, text) {
    const e = document.createElement(tag);
    for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function svg(tag, attrs, text) {
    const e = document.createElementNS(SVG, tag);
    for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function num(n) {
    if (n === null || n === undefined) return "–";
    const a = Math.abs(n);
    if (a >= 1e9) return (n / 1e9).toFixed(2) + "G";
    if (a >= 1e6) return (n / 1e6).toFixed(2) + "M";
    if (a >= 1e4) return (n / 1e3).toFixed(1) + "k";
    if (Number.isInteger(n)) return String(n);
    return n.toFixed(1);
  }
  function dur(ms) {
    if (ms === null || ms === undefined) return "–";
    const a = Math.abs(ms);
    if (a < 1) return ms.toFixed(2) + " ms";
    if (a < 1000) return Math.round(ms) + " ms";
    if (a < 60000) return (ms / 1000).toFixed(1) + " s";
    if (a < 3600000) return Math.floor(ms / 60000) + " min " + Math.round((ms % 60000) / 1000) + " s";
    return Math.floor(ms / 3600000) + " h " + Math.round((ms % 3600000) / 60000) + " min";
  }
  function bytes(n) {
    if (!n) return "–";
    if (n >= 1 << 30) return (n / (1 << 30)).toFixed(1) + " GiB";
    if (n >= 1 << 20) return (n / (1 << 20)).toFixed(1) + " MiB";
    if (n >= 1 << 10) return (n / (1 << 10)).toFixed(1) + " KiB";
    return n + " B";
  }
  function pct(r) { return Math.round(r * 100) + "%"; }
  // An operator's keyed state on the heap: keys, bytes, bytes a key.
  function stateText(o) {
    if (!o.state_keys) return "–";
    return `${num(o.state_keys)} keys, ${bytes(o.state_bytes)}, ${Math.round(o.state_bytes_per_key)} B/key`;
  }
  function time(iso) {
    const d = new Date(iso);
    return isNaN(d) ? "–" : clock(d);
  }
  // clock is a time of day on the 24-hour clock, as the watermarks are.
  function clock(d) {
    return d.toLocaleTimeString([], { hourCycle: "h23" });
  }

  function replaceRows(tbody, rows) {
    // Each cell carries its column's name, which a phone shows beside it
    // (the tables stack there: one block per row).
    const head = tbody.parentNode.tHead ? [...tbody.parentNode.tHead.rows[0].cells].map((c) => c.textContent) : [];
    const f = document.createDocumentFragment();
    for (const r of rows) {
      [...r.cells].forEach((td, i) => { if (head[i]) td.dataset.label = head[i]; });
      f.appendChild(r);
    }
    tbody.replaceChildren(f);
  }
  function row(cells, cls) {
    const tr = el("tr");
    cells.forEach((c, i) => {
      const td = el("td", {}, c);
      if (cls && cls[i]) td.className = cls[i];
      tr.appendChild(td);
    });
    return tr;
  }

  // layers places every operator in a column: sources (and nothing
  // upstream) in 0, every other one right of all its inputs; a side
  // output right of the operator it comes from.
  function layers(job) {
    const inputs = new Map();
    job.operators.forEach((o) => inputs.set(o.id, []));
    job.edges.forEach((e) => inputs.get(e.to) && inputs.get(e.to).push(e.from));
    job.operators.forEach((o) => {
      if (o.side_output_of !== undefined && inputs.get(o.id)) inputs.get(o.id).push(o.side_output_of);
    });
    const layer = new Map();
    const visit = (id, depth) => {
      if (layer.has(id)) return layer.get(id);
      if (depth > job.operators.length) return 0; // a cycle cannot happen; be safe anyway
      let l = 0;
      for (const i of inputs.get(id) || []) l = Math.max(l, visit(i, depth + 1) + 1);
      layer.set(id, l);
      return l;
    };
    job.operators.forEach((o) => visit(o.id, 0));
    return layer;
  }

  const W = 190, H = 70, GX = 70, GY = 24, GXD = 36, PAD = 12; // GXD: between layers top to bottom

  function drawGraph(job) {
    const layer = layers(job);
    const cols = [];
    job.operators.forEach((o) => {
      const l = layer.get(o.id);
      (cols[l] = cols[l] || []).push(o);
    });
    const pos = new Map();
    let rows = 0;
    cols.forEach((c) => { rows = Math.max(rows, c.length); });
    // Left to right where it fits; top to bottom where it does not (a
    // phone), so that the graph is seen whole rather than cut off.
    const across = PAD * 2 + cols.length * W + Math.max(0, cols.length - 1) * GX;
    const box = $("graph").clientWidth;
    const down = box > 0 && across > box;
    cols.forEach((c, l) => {
      c.forEach((o, i) => pos.set(o.id, down ? { x: PAD + i * (W + GY), y: PAD + l * (H + GXD) }
        : { x: PAD + l * (W + GX), y: PAD + i * (H + GY) }));
    });
    const width = down ? PAD * 2 + rows * W + Math.max(0, rows - 1) * GY : across;
    const height = down ? PAD * 2 + cols.length * H + Math.max(0, cols.length - 1) * GXD
      : PAD * 2 + rows * H + Math.max(0, rows - 1) * GY;
    const root = svg("svg", { viewBox: `0 0 ${width} ${height}`, width: width, height: height, role: "img",
      "aria-label": "Job graph: " + job.operators.map((o) => o.name).join(", ") });
    const defs = svg("defs");
    const marker = svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto" });
    marker.appendChild(svg("path", { d: "M0,0 L10,5 L0,10 z", class: "arrowhead" }));
    defs.appendChild(marker);
    root.appendChild(defs);

    const edge = (from, to, label, cls) => {
      const a = pos.get(from), b = pos.get(to);
      if (!a || !b) return;
      if (down) {
        const x1 = a.x + W / 2, y1 = a.y + H, x2 = b.x + W / 2, y2 = b.y, my = (y1 + y2) / 2;
        root.appendChild(svg("path", { d: `M${x1},${y1} C${x1},${my} ${x2},${my} ${x2},${y2}`, class: "edge " + cls, "marker-end": "url(#arrow)" }));
        root.appendChild(svg("text", { x: (x1 + x2) / 2 + 8, y: my + 4, class: "edge-label" }, label));
        return;
      }
      const x1 = a.x + W, y1 = a.y + H / 2, x2 = b.x, y2 = b.y + H / 2, mx = (x1 + x2) / 2;
      root.appendChild(svg("path", { d: `M${x1},${y1} C${mx},${y1} ${mx},${y2} ${x2},${y2}`, class: "edge " + cls, "marker-end": "url(#arrow)" }));
      root.appendChild(svg("text", { x: mx, y: (y1 + y2) / 2 - 4, class: "edge-label", "text-anchor": "middle" }, label));
    };
    job.edges.forEach((e) => edge(e.from, e.to, e.kind, e.chained ? "chained" : ""));
    job.operators.forEach((o) => {
      if (o.side_output_of !== undefined) edge(o.side_output_of, o.id, "late", "side");
    });

    job.operators.forEach((o) => {
      const p = pos.get(o.id);
      const g = svg("g", { class: "op bp-" + o.backpressure.toLowerCase(), transform: `translate(${p.x},${p.y})` });
      const title = svg("title", {}, `${o.name}: ${num(o.records_per_sec)} records/s, backpressure ${pct(o.backpressure_ratio)} (${o.backpressure})`);
      g.appendChild(title);
      g.appendChild(svg("rect", { width: W, height: H, rx: 6 }));
      const name = o.name.length > 24 ? o.name.slice(0, 23) + "…" : o.name;
      g.appendChild(svg("text", { x: 10, y: 20, class: "op-name" }, name));
      g.appendChild(svg("text", { x: 10, y: 40 }, `×${o.parallelism}  ${num(o.records_per_sec)} rec/s`));
      g.appendChild(svg("text", { x: 10, y: 59 }, `backpressure ${pct(o.backpressure_ratio)} ${o.backpressure}`));
      root.appendChild(g);
    });
    $("graph").replaceChildren(root);
  }

  function drawJob(job) {
    document.title = job.name + " · weir";
    $("job-name").textContent = job.name;
    const st = $("state");
    st.textContent = job.state;
    st.className = "state state-" + job.state.toLowerCase();
    if (job.start_time) {
      $("uptime").textContent = "running for " + dur(new Date(job.now) - new Date(job.start_time));
    }
    const inputs = new Set(job.edges.map((e) => e.to));
    let read = 0, rate = 0, late = 0, dead = 0, bad = 0;
    for (const o of job.operators) {
      if (!inputs.has(o.id) && o.side_output_of === undefined) {
        read += o.records_out;
        rate += o.records_per_sec;
      }
      late += o.late_records_dropped;
      dead += o.dead_letters;
      bad += o.bad_records_skipped;
    }
    $("total-read").textContent = num(read);
    $("total-rate").textContent = num(rate) + " /s";
    $("total-late").textContent = num(late);
    $("total-dead").textContent = num(dead);
    $("total-bad").textContent = num(bad);

    drawGraph(job);

    replaceRows($("operators").tBodies[0], job.operators.map((o) => row([
      o.name, String(o.parallelism), num(o.records_in), num(o.records_out), num(o.records_per_sec),
      `${pct(o.backpressure_ratio)} ${o.backpressure}`, num(o.late_records_dropped), num(o.dead_letters), stateText(o),
    ], ["name", "", "", "", "", "bp bp-" + o.backpressure.toLowerCase(), o.late_records_dropped ? "warn" : "", o.dead_letters ? "warn" : "", "state"])));

    const wm = [];
    for (const o of job.operators) {
      o.watermark_ms.forEach((w, i) => {
        const lag = o.watermark_lag_ms[i];
        let wt = "none yet", lt = "–";
        if (w !== null && w >= END) { wt = "end of input"; }
        else if (w !== null) { wt = new Date(w).toISOString().replace("T", " ").replace("Z", ""); lt = dur(lag); }
        // Red only when the job falls behind (a lag over a minute that
        // grows): a replay of old events has a large lag that shrinks.
        const r = row([o.name, String(i), wt, lt], ["name", "", "", o.watermark_behind && lag > 60000 ? "warn" : ""]);
        if (o.watermark_pace !== null && o.watermark_pace !== undefined && lt !== "–") {
          r.cells[3].title = `event time moves ${o.watermark_pace.toFixed(2)}× the wall clock` +
            (o.watermark_behind ? ": the job falls behind its input" : "");
        }
        wm.push(r);
      });
    }
    replaceRows($("watermarks").tBodies[0], wm);
    drawGroup(job.group);
  }

  // drawGroup shows what this process owns in group mode (--app-id); the
  // panel stays hidden for other jobs.
  function drawGroup(g) {
    const panel = $("group");
    if (!g) {
      panel.hidden = true;
      return;
    }
    panel.hidden = false;
    const b = el("b", {}, g.app_id);
    $("group-info").replaceChildren(document.createTextNode("App id "), b,
      document.createTextNode(` · member ${g.member_id || "(joining)"} · generation ${g.generation} · ${g.rebalances} rebalances · ${g.partitions.length} partitions`));
    const opt = (n) => (n === null || n === undefined ? "–" : String(n));
    replaceRows($("group-partitions").tBodies[0], g.partitions.map((p) => row([
      p.topic, String(p.partition), time(p.assigned_time), opt(p.committed), opt(p.end), opt(p.lag),
    ], ["name", "", "", "", "", p.lag > 100000 ? "warn" : ""])));
  }

  function drawCheckpoints(ck) {
    const c = ck.counts;
    $("total-ck").textContent = `${c.completed} done, ${c.failed + c.aborted} failed`;
    const r = ck.latest_restored;
    $("restored").textContent = r ? `Restored from ${r.id ? "checkpoint " + r.id : "a savepoint"} (${r.path}) at ${time(r.restore_time)}` +
      (c.restarts ? `; ${c.restarts} restarts` : "") : "Started empty (no restore).";

    // The timeline: one bar per checkpoint, oldest left, height by duration.
    const hist = ck.history.slice().reverse();
    const bw = 14, gap = 4, th = 80;
    const maxd = Math.max(1, ...hist.map((h) => h.duration_ms));
    const w = Math.max(200, hist.length * (bw + gap));
    const t = svg("svg", { viewBox: `0 0 ${w} ${th + 16}`, width: w, height: th + 16, role: "img",
      "aria-label": `Checkpoint durations, the last ${hist.length}` });
    hist.forEach((h, i) => {
      const bh = Math.max(2, Math.round((h.duration_ms / maxd) * th));
      const g = svg("g", { class: "ck ck-" + h.status.toLowerCase() });
      g.appendChild(svg("title", {}, `${h.savepoint ? "savepoint" : "checkpoint"} ${h.id} ${h.status} at ${time(h.trigger_time)}: ${dur(h.duration_ms)}, ${bytes(h.size_bytes)}`));
      g.appendChild(svg("rect", { x: i * (bw + gap), y: th - bh, width: bw, height: bh }));
      if (h.status !== "COMPLETED") g.appendChild(svg("text", { x: i * (bw + gap) + bw / 2, y: th + 12, "text-anchor": "middle" }, "✕"));
      t.appendChild(g);
    });
    $("timeline").replaceChildren(t);

    replaceRows($("checkpoints").tBodies[0], ck.history.slice(0, 20).map((h) => row([
      (h.savepoint ? "savepoint " : "") + h.id, h.status, time(h.trigger_time), dur(h.duration_ms), bytes(h.size_bytes), dur(h.alignment_ms),
    ], ["", "ck-" + h.status.toLowerCase(), "", "", "", ""])));
  }

  async function get(path) {
    const r = await fetch(path, { credentials: "same-origin", cache: "no-store" });
    if (r.status === 401) throw new Error("401");
    if (!r.ok) throw new Error(r.status + " " + r.statusText);
    return r.json();
  }

  let timer = 0;
  async function poll() {
    clearTimeout(timer);
    try {
      const [job, ck] = await Promise.all([get("/v1/job"), get("/v1/checkpoints")]);
      drawJob(job);
      drawCheckpoints(ck);
      $("updated").textContent = clock(new Date());
      $("conn").textContent = "live";
      $("conn").className = "";
    } catch (e) {
      if (e.message === "401") {
        $("conn").replaceChildren(document.createTextNode("logged out: open "), el("a", { href: "/login" }, "/login?token=…"));
        return; // no point in polling without the token
      }
      $("conn").textContent = "not reachable (" + e.message + "); retrying";
      $("conn").className = "warn";
    }
    timer = setTimeout(poll, POLL_MS);
  }

  async function savepoint() {
    const b = $("savepoint");
    b.disabled = true;
    $("sp-result").textContent = "taking a savepoint…";
    try {
      const r = await fetch("/v1/savepoints", {
        method: "POST", credentials: "same-origin", cache: "no-store",
        headers: { "Content-Type": "application/json" }, body: "{}",
      });
      const body = await r.json();
      $("sp-result").textContent = r.ok ? "savepoint written to " + body.path : "savepoint failed: " + body.error;
    } catch (e) {
      $("sp-result").textContent = "savepoint failed: " + e.message;
    } finally {
      b.disabled = false;
      poll();
    }
  }

  document.addEventListener("DOMContentLoaded", () => {
    $("savepoint").addEventListener("click", savepoint);
    poll();
  });
})();
