"use strict";
// The trace page's renderer. Every text from the trace goes through textContent or text
// nodes (never innerHTML): tool outputs are untrusted. Iterations render when first opened.
(function () {
  const DATA = JSON.parse(document.getElementById("trace-data").textContent);
  const FIRST_CHARS = 2000; // characters of a message shown before "show more"
  const STEP = 4; // each "show more" multiplies what is shown
  const numbers = new Intl.NumberFormat("en-US");
  const fmt = (n) => (n === null || n === undefined ? "—" : numbers.format(n));
  const saved = (sent, full) => (full > 0 ? Math.round((1 - sent / full) * 100) + "%" : "—");
  const money = (c) => (c === null || c === undefined ? "—" : "$" + c.toFixed(4));
  const span = (r) => (r[0] === r[1] ? String(r[0]) : r[0] + "–" + r[1]);

  function h(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function refButton(ref) {
    const label = ref.label || (ref.id ? ref.id + " (iteration " + ref.it + ")" : "iteration " + ref.it);
    const button = h("button", "ref", label);
    button.type = "button";
    button.addEventListener("click", () => reveal(ref));
    return button;
  }

  // ------------------------------------------------------------------ previews
  function preview(text) {
    const wrap = h("div", "preview");
    const pre = h("pre");
    const more = h("button", "more");
    more.type = "button";
    let budget = FIRST_CHARS;
    function draw() {
      pre.textContent = "";
      let head;
      let tail;
      if (!text.t) {
        head = Math.min(text.h.length, budget);
        tail = 0;
      } else {
        head = Math.min(text.h.length, Math.ceil(budget * 0.75));
        tail = Math.min(text.t.length, budget - head);
      }
      pre.append(text.h.slice(0, head));
      const gap = text.n - head - tail;
      const everything = head === text.h.length && tail === text.t.length;
      if (gap > 0) {
        const note = everything
          ? "[… " + fmt(gap) + " chars not embedded in this page: the full text is in the trace (line below) …]"
          : "[… " + fmt(gap) + " chars not shown: show more …]";
        pre.append(head ? "\n" : "", h("span", "gap", note), tail ? "\n" : "");
      }
      if (tail) pre.append(text.t.slice(text.t.length - tail));
      more.hidden = everything;
      more.textContent = "show more (" + fmt(Math.min(budget * STEP, text.h.length + text.t.length)) + " chars)";
    }
    more.addEventListener("click", () => {
      budget *= STEP;
      draw();
    });
    draw();
    wrap.append(pre, more);
    return wrap;
  }

  // ------------------------------------------------------------------ messages
  const MARK_LABELS = {
    truncated: "truncated", windowed: "windowed", spilled: "spilled", error: "error", dedup: "dedup",
    retrieval: "retrieval", "recovered-by": "recovered",
  };

  function markElement(mark) {
    const div = h("div", "mark mark-" + mark.k);
    div.dataset.kind = mark.k;
    div.append(h("span", "mark-label", MARK_LABELS[mark.k] || mark.k), mark.t);
    if (mark.how) div.append(" · full output: ", h("code", "how", mark.how));
    for (const ref of mark.refs || []) div.append(" ", refButton(ref));
    return div;
  }

  function messageElement(m) {
    const isError = (m.marks || []).some((k) => k.k === "error");
    const box = h("div", "msg role-" + m.role + (isError ? " is-error" : ""));
    box.dataset.callId = m.id || "";
    const head = h("div", "msg-head");
    head.append(h("span", "role", m.role === "tool" ? "tool · " + (m.name || "") : m.role));
    if (m.id) head.append(h("code", "cid", m.id));
    head.append(h("span", "line", fmt(m.text.n) + " chars · trace line " + m.line));
    box.append(head);
    for (const mark of m.marks || []) box.append(markElement(mark));
    if (m.text.n > 0) box.append(preview(m.text));
    if (m.calls) {
      const list = h("ul", "calls");
      for (const call of m.calls) {
        const item = h("li");
        item.append(h("code", null, "→ " + call.name + "(" + call.args + ")"), " ");
        item.append(refButton({ it: null, id: call.id, label: call.id }));
        list.append(item);
      }
      box.append(list);
    }
    return box;
  }

  // ------------------------------------------------------------------ iterations
  function promptPanel(it) {
    const panel = h("div", "prompt");
    panel.append(h("h3", null, "Prompt of iteration " + it.i));
    const line = h("div", "muted");
    const provider = "provider prompt " + fmt(it.prompt) + ", cached " + fmt(it.cached);
    const sent = "sent " + fmt(it.sent) + " tokens (" + provider + ") · full history " + fmt(it.full) +
      " · saved " + saved(it.sent, it.full);
    line.textContent = (DATA.meta.measured ? sent : provider) + " · completion " + fmt(it.completion) +
      " · cost " + money(it.cost);
    panel.append(line);
    const list = h("ul");
    const add = (text, cls) => list.appendChild(h("li", cls, text));
    if (it.trunc) add("truncated " + fmt(it.trunc) + " output(s): " + fmt(it.trunc_chars) + " chars hidden");
    for (const item of it.hidden) {
      const li = h("li");
      let text = item.k + ": " + item.id + (item.it !== null ? " (iteration " + item.it + ")" : "");
      if (item.kept !== null && item.orig) text += ", " + fmt(item.kept) + " of " + fmt(item.orig) + " chars shown";
      li.append(text, " ", refButton({ it: item.it, id: item.id, label: "open" }));
      list.append(li);
    }
    if (it.masked) add("masked or elided " + fmt(it.masked) + " output(s) behind placeholders: " + fmt(it.masked_chars) + " chars");
    if (it.window) add("iterations " + it.window + " not shown verbatim (windowed out)");
    if (it.summary_in) add("included the summary of iterations " + span(it.summary_in));
    if (it.compacted) add("compacted before this call");
    if (it.requests > 1) add(it.requests + " requests (retried after a context-window error)");
    for (const other of it.other) add(other);
    for (const s of it.summaries) {
      const sum = DATA.summaries[s];
      add("the summary of iterations " + sum.first + "–" + sum.last + " landed during this iteration");
    }
    for (const e of it.errors) add(e[0] + ": " + e[1], "err");
    if (!DATA.meta.measured) add("no context-pipeline record in this trace (an imported recording)");
    else if (!list.childElementCount) add("nothing hidden: the full history was sent");
    panel.append(list);
    return panel;
  }

  function tags(it) {
    const box = h("span", "tags");
    const tag = (cls, text) => box.append(h("span", "tag " + cls, text));
    if (it.errors.length || it.tool_errors) tag("tag-error", "error" + (it.tool_errors ? " ×" + (it.errors.length + it.tool_errors) : ""));
    if (it.trunc) tag("tag-trunc", "truncated " + it.trunc);
    if (it.masked) tag("tag-masked", "elided/masked " + it.masked);
    if (it.window) tag("tag-window", "window " + it.window);
    if (it.dedup) tag("tag-dedup", "dedup " + it.dedup);
    if (it.retr) tag("tag-retr", "retrieval " + it.retr);
    if (it.summaries.length) tag("tag-summary", "summary landed");
    for (const other of it.other) tag("tag-other", other);
    return box;
  }

  function flags(it) {
    const out = [];
    if (it.errors.length || it.tool_errors) out.push("error");
    if (it.trunc || it.masked || it.window || it.hidden.length) out.push("hidden");
    if (it.retr) out.push("retrieval");
    if (it.summaries.length || it.summary_in) out.push("summary");
    return out.join(" ");
  }

  const rows = new Map();
  const maxFull = Math.max(1, ...DATA.iterations.map((it) => Math.max(it.full, it.sent)));

  function row(number, it) {
    const details = h("details", "it");
    details.dataset.it = String(number);
    const summary = h("summary");
    summary.append(h("span", "it-no", number === 0 ? "task" : "#" + number));
    const tools = it ? (it.tools.length ? it.tools.join(", ") : it.finish ? "final answer" : "") : "system prompt and task";
    summary.append(h("span", "it-tools mono", tools));
    const nums = h("span", "it-nums");
    if (it && !DATA.meta.measured) {
      nums.append(h("b", null, fmt(it.prompt)), " prompt tokens (provider)");
    } else if (it) {
      nums.append(h("b", null, fmt(it.sent)), " sent / " + fmt(it.full) + " full · saved " + saved(it.sent, it.full));
      const bar = h("span", "bar");
      bar.title = "sent vs full history";
      const fill = h("i");
      fill.style.width = Math.max(1, Math.round((100 * it.sent) / maxFull)) + "%";
      bar.append(fill);
      bar.style.width = Math.max(6, Math.round((110 * it.full) / maxFull)) + "px";
      nums.append(bar);
    }
    summary.append(nums);
    summary.append(it ? tags(it) : h("span"));
    details.append(summary);
    if (it) {
      details.dataset.flags = flags(it);
      if (it.errors.length || it.tool_errors) details.classList.add("has-error");
    }
    const state = { details: details, it: it, rendered: false };
    details.addEventListener("toggle", () => {
      if (details.open) render(state, number);
    });
    rows.set(number, state);
    return details;
  }

  function render(state, number) {
    if (state.rendered) return;
    state.rendered = true;
    const body = h("div", "body");
    if (state.it) body.append(promptPanel(state.it));
    const messages = DATA.messages[String(number)] || [];
    for (const m of messages) body.append(messageElement(m));
    if (!messages.length) body.append(h("p", "empty", "no message recorded for this iteration"));
    state.details.append(body);
  }

  function reveal(ref) {
    let number = ref.it;
    if (number === null || number === undefined) {
      for (const [n, msgs] of Object.entries(DATA.messages)) {
        if (msgs.some((m) => m.id === ref.id && m.role === "tool")) number = Number(n);
      }
    }
    const state = rows.get(number);
    if (!state) return;
    state.details.hidden = false;
    state.details.open = true;
    render(state, number);
    let target = state.details;
    if (ref.id) {
      for (const node of state.details.querySelectorAll(".msg")) {
        if (node.dataset.callId === ref.id && node.classList.contains("role-tool")) target = node;
      }
    }
    target.scrollIntoView({ block: "center" });
    target.classList.add("flash");
    setTimeout(() => target.classList.remove("flash"), 1600);
  }

  // ------------------------------------------------------------------ summaries
  function renderSummaries() {
    const box = document.getElementById("summaries");
    if (!DATA.summaries.length) {
      box.append(h("p", "empty", "No summary was made in this run."));
      return;
    }
    DATA.summaries.forEach((s, index) => {
      const card = h("div", "msg summary-card");
      card.id = "summary-" + index;
      const head = h("div", "msg-head");
      head.append(h("span", "role", "summary of iterations " + s.first + "–" + s.last));
      const users = DATA.iterations.filter((it) => it.summary_in && it.summary_in[0] === s.first && it.summary_in[1] === s.last);
      let meta = (s.model ? "by " + s.model : "deterministic digest") + " · landed during iteration " + s.landed;
      if (users.length) meta += " · in the prompts of iterations " + users[0].i + "–" + users[users.length - 1].i;
      if (s.tokens) meta += " · " + fmt(s.tokens) + " tokens";
      head.append(h("span", "muted", meta), h("span", "line", "trace line " + s.line));
      card.append(head, preview(s.text));
      box.append(card);
    });
  }

  // ------------------------------------------------------------------ toolbar, chart
  function setFilter(name) {
    for (const button of document.querySelectorAll("[data-filter]")) button.classList.toggle("on", button.dataset.filter === name);
    for (const state of rows.values()) {
      const f = state.details.dataset.flags || "";
      state.details.hidden = name !== "all" && !f.split(" ").includes(name);
    }
  }

  function wire() {
    for (const button of document.querySelectorAll("[data-filter]")) {
      button.addEventListener("click", () => setFilter(button.dataset.filter));
    }
    document.getElementById("expand-all").addEventListener("click", () => {
      for (const [number, state] of rows) if (!state.details.hidden) { state.details.open = true; render(state, number); }
    });
    document.getElementById("collapse-all").addEventListener("click", () => {
      for (const state of rows.values()) state.details.open = false;
    });
    for (const button of document.querySelectorAll("[data-scale]")) {
      button.addEventListener("click", () => {
        for (const other of document.querySelectorAll("[data-scale]")) other.classList.toggle("on", other === button);
        for (const svg of document.querySelectorAll("svg.chart")) {
          svg.toggleAttribute("hidden", !svg.classList.contains("chart-" + button.dataset.scale)); // SVG has no .hidden
        }
      });
    }
    for (const hit of document.querySelectorAll("svg.chart .hit")) {
      hit.addEventListener("click", () => reveal({ it: Number(hit.dataset.it) }));
    }
  }

  const list = document.getElementById("iterations");
  const byNumber = new Map(DATA.iterations.map((it) => [it.i, it]));
  const numbersSeen = new Set([...byNumber.keys(), ...Object.keys(DATA.messages).map(Number)]);
  for (const number of [...numbersSeen].sort((a, b) => a - b)) list.append(row(number, byNumber.get(number)));
  renderSummaries();
  wire();
  document.body.dataset.ready = "1";
})();
