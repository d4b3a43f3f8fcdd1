// askbridge web inbox: answers, decisions and dismissals over fetch, live
// updates over server-sent events. No framework, no build step. Text from
// agents arrives already escaped in server-rendered HTML; this script
// never builds HTML from strings.
"use strict";

(function () {
  const meta = (name) => {
    const m = document.querySelector('meta[name="' + name + '"]');
    return m ? m.content : "";
  };
  const csrf = meta("csrf-token");
  const link = meta("answer-link");
  const root = meta("root"); // the path base_url puts the app under: "" at the root
  const page = document.body.dataset.page;
  let stopStream = () => {}; // closes the request page's live stream (stream)

  function localTimes(root) {
    for (const t of root.querySelectorAll("time[datetime]")) {
      const d = new Date(t.dateTime);
      if (!isNaN(d)) {
        // "Dec 6, 1:39 PM", not "01:39 PM" (and "6. Dez., 5:07" in German).
        t.textContent = d.toLocaleString([], { month: "short", day: "numeric", hour: "numeric", minute: "2-digit" });
        t.title = d.toString();
      }
    }
  }

  // decimalComma: the page's locale writes 1.5 as "1,5", and groups
  // thousands with a point ("1.000").
  const decimalComma = (1.5).toLocaleString().includes(",");
  // grouped is a number that the locale's thousands separator before
  // exactly three digits could group: "1,000" in English, "1.000" in
  // German, a thousand or one.
  const grouped = decimalComma ? /^[+-]?\d{1,3}\.\d{3}$/ : /^[+-]?\d{1,3},\d{3}$/;

  // pointed is a number field's text with a decimal comma made the point
  // the bridge reads: where a region writes "1,5", a phone's decimal
  // keypad (iOS's) has a comma and no point to type.
  function pointed(s) {
    return /^[+-]?(\d+,\d*|,\d+)$/.test(s) ? s.replace(",", ".") : s;
  }

  // Checks text against a typed field's type, as the bridge does.
  function checkTyped(type, text, required) {
    let s = text.trim();
    if (s === "") return required ? "This field is required." : "";
    if (type === "number" && grouped.test(s)) {
      const [mark, group] = decimalComma ? [",", "point"] : [".", "comma"];
      return "Enter " + s.replace(/[.,]/, "") + " for thousands, or " + s.replace(/[.,]/, mark) + " with a decimal " + (decimalComma ? "comma" : "point") +
        ": a " + group + " before three digits could be either.";
    }
    if (type === "number") s = pointed(s);
    // Zeros after a point still make a whole number ("3.0"), as the bridge takes it.
    if (type === "integer" && /^[+-]?\d+\.0*$/.test(s)) s = s.slice(0, s.indexOf("."));
    if (type === "integer" && !/^[+-]?\d+$/.test(s)) return "Enter a whole number, such as 42.";
    // An integer field takes 64 bits, as an agent reads it.
    if (type === "integer" && (BigInt(s) < -(2n ** 63n) || BigInt(s) >= 2n ** 63n)) return "Enter a whole number from -9223372036854775808 to 9223372036854775807.";
    if (type === "number" && (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(s) || !isFinite(Number(s)))) return "Enter a number, such as 3.5.";
    return "";
  }

  function fieldError(fs, msg) {
    const e = fs.querySelector(".err");
    if (e) e.textContent = msg;
    // A boolean's Yes and No are marked too: choosing one clears its error.
    for (const input of fs.querySelectorAll(".custom, .opts.two input")) input.setAttribute("aria-invalid", msg ? "true" : "false");
  }

  // Checks a question's field: a typed one as the bridge does, a required
  // one for text that is more than spaces.
  function validate(fs) {
    const type = fs.dataset.type;
    const required = fs.hasAttribute("data-required");
    if (!type && !required) return true;
    let msg = "";
    if (type === "boolean") {
      if (required && !fs.querySelector('input[type=radio]:checked')) msg = "Choose Yes or No.";
    } else if (type) {
      msg = checkTyped(type, fs.querySelector(".custom").value, required);
    } else if (fs.querySelector(".custom").value.trim() === "") {
      msg = "Type an answer.";
    }
    fieldError(fs, msg);
    return msg === "";
  }

  // choices are the radios of a single-choice question's options (not a
  // Yes/No field's), whose free text replaces the option chosen.
  function choices(fs) {
    return fs.hasAttribute("data-multi") ? [] : [...fs.querySelectorAll(".opts:not(.two) input[type=radio]")];
  }

  // choicesOf are the inputs of a question's options, single or multiple.
  function choicesOf(fs) {
    return fs.querySelectorAll(".opts:not(.two) input");
  }

  function collect(form) {
    const answers = [];
    let ok = true;
    for (const fs of form.querySelectorAll("fieldset.q")) {
      if (!validate(fs)) ok = false;
      const text = fs.querySelector(".custom");
      if (text && text.value.trim() !== "" && choices(fs).some((r) => r.checked)) {
        // What is written replaces the choice: sent both, the choice would
        // be dropped without the person knowing.
        fieldError(fs, "Choose an option or write something else, not both: what you write replaces the choice. Tap the chosen option again to clear it.");
        ok = false;
      }
      const item = { id: fs.dataset.qid, selected: [] };
      for (const input of choicesOf(fs)) if (input.checked) item.selected.push(input.value);
      let custom = "";
      if (fs.dataset.type === "boolean") {
        const b = fs.querySelector(".opts.two input:checked");
        custom = b ? b.value : "";
      } else {
        const c = fs.querySelector(".custom");
        custom = c ? c.value.trim() : "";
        if (fs.dataset.type === "number") custom = pointed(custom);
      }
      if (custom) item.custom = custom;
      answers.push(item);
    }
    // A lone question sent with nothing chosen and nothing written would be
    // answered with nothing: the bridge refuses it, and so does the form.
    const all = form.querySelectorAll("fieldset.q");
    if (ok && all.length === 1 && choicesOf(all[0]).length && !answers[0].selected.length && !answers[0].custom) {
      fieldError(all[0], chooseOrWrite);
      ok = false;
    }
    return ok ? { answers } : null;
  }
  const chooseOrWrite = "Choose an option or write an answer."; // surface.MsgChooseOrWrite

  async function send(card, action, body) {
    const headers = { "Content-Type": "application/json" };
    if (csrf) headers["X-CSRF-Token"] = csrf;
    if (link) headers["X-Askbridge-Link"] = link;
    const res = await fetch(root + "/web/requests/" + encodeURIComponent(card.dataset.id) + "/" + action, {
      method: "POST", headers, body: JSON.stringify(body || {}), credentials: "same-origin",
    });
    let data = {};
    try { data = await res.json(); } catch (e) { /* not JSON */ }
    return { res, data };
  }

  // holdsFocus reports whether focus is in card.
  function holdsFocus(card) {
    return card.contains(document.activeElement);
  }

  // leave takes card off the inbox. Focus in it goes to the card below
  // (or above), or to the list's empty line: not back to the page's top.
  function leave(card) {
    card.classList.add("leaving");
    setTimeout(() => {
      const focus = holdsFocus(card);
      const next = [card.nextElementSibling, card.previousElementSibling].find((c) => c && c.matches(".card:not(.leaving)"));
      card.remove();
      if (!focus) return;
      const to = next || document.querySelector("#cards .empty");
      if (to) { to.tabIndex = -1; to.focus(); }
    }, 450);
  }

  function showOutcome(card, html) {
    const focus = holdsFocus(card);
    const tpl = document.createElement("template");
    tpl.innerHTML = html; // server-rendered by html/template: escaped
    card.replaceChildren(tpl.content);
    localTimes(card);
    card.classList.add("done");
    // The button pressed is gone: focus goes to how it ended, which a
    // screen reader then reads.
    const out = card.querySelector(".outcome");
    if (focus && out) { out.tabIndex = -1; out.focus(); }
    endedAt.set(card.dataset.id, listsRead);
    if (page === "inbox") setTimeout(() => leave(card), 2500);
    if (page === "request") { stopStream(); if (liveEl) liveEl.remove(); }
  }

  async function showEnded(card) {
    try {
      const res = await fetch(root + "/web/requests/" + encodeURIComponent(card.dataset.id) + "/outcome", { credentials: "same-origin" });
      if (res.status === 200) { showOutcome(card, await res.text()); return; }
    } catch (e) { /* gone from the page all the same */ }
    leave(card);
  }

  // busy marks a form whose answer is on its way: its buttons do nothing
  // (a second tap sends nothing) but are not disabled, since a disabled
  // button loses focus to the page's top.
  function busy(form, on) {
    form.toggleAttribute("data-busy", on);
    form.setAttribute("aria-busy", String(on));
    for (const b of form.querySelectorAll("button")) b.setAttribute("aria-disabled", String(on));
  }

  async function act(card, form, action, body) {
    if (form.hasAttribute("data-busy")) return;
    const formErr = form.querySelector(".form-err");
    formErr.textContent = "";
    busy(form, true);
    card.dataset.touched = "1"; // should the send fail, the next list says how it ended
    try {
      const { res, data } = await send(card, action, body);
      if (data.html) return showOutcome(card, data.html);
      const err = (data.error || {});
      const fs = err.field && [...form.querySelectorAll("fieldset.q")].find((f) => f.dataset.qid === err.field);
      if (fs) fieldError(fs, err.message);
      else formErr.textContent = err.message || ("The bridge answered " + res.status + ".");
    } catch (e) {
      formErr.textContent = "Could not reach the bridge. Check the connection and try again.";
    } finally {
      busy(form, false);
      // The request ended while this was on its way (a request's page),
      // and the reply did not say how: the page, reloaded, does.
      if (card.dataset.ended && !card.classList.contains("done")) location.reload();
    }
  }

  // doubleTap is how soon a second tap is the second half of a double tap
  // (a phone sends both), not a tap of its own, in ms.
  const doubleTap = 400;

  // armDismiss asks for a second tap, which dismisses: a deliberate one,
  // not the second half of a double tap.
  function armDismiss(btn, card, form) {
    if (btn.classList.contains("confirm")) {
      if (Date.now() - Number(btn.dataset.armedAt) >= doubleTap) act(card, form, "dismiss", {});
      return;
    }
    const label = btn.textContent;
    btn.dataset.armedAt = String(Date.now());
    btn.classList.add("confirm");
    btn.textContent = "Tap again to dismiss";
    setTimeout(() => { btn.classList.remove("confirm"); btn.textContent = label; }, 4000);
  }

  document.addEventListener("submit", (ev) => {
    const form = ev.target.closest("form.answer");
    if (!form) return;
    ev.preventDefault();
    if (form.hasAttribute("data-busy")) return;
    const card = form.closest(".card");
    const body = collect(form);
    if (!body) {
      form.querySelector(".form-err").textContent = "Fix the highlighted field first.";
      const bad = form.querySelector('[aria-invalid="true"]');
      if (bad) bad.focus();
      return;
    }
    act(card, form, "answer", body);
  });

  document.addEventListener("click", (ev) => {
    const btn = ev.target.closest("button");
    if (!btn) return;
    const card = btn.closest(".card");
    const form = btn.closest("form.answer, form.decide");
    if (!card || !form) return;
    if (form.hasAttribute("data-busy")) {
      ev.preventDefault();
      return;
    }
    if (btn.hasAttribute("data-sign")) {
      // A phone's numeric keypad has no minus key: this button is it.
      ev.preventDefault();
      const input = btn.parentElement.querySelector("input.custom");
      const v = input.value.trim();
      input.value = v.startsWith("-") ? v.slice(1) : "-" + v.replace(/^\+/, "");
      input.dispatchEvent(new Event("input", { bubbles: true }));
      input.focus();
    } else if (btn.hasAttribute("data-dismiss")) {
      ev.preventDefault();
      armDismiss(btn, card, form);
    } else if (btn.dataset.outcome) {
      ev.preventDefault();
      const note = form.querySelector("textarea[name=note]").value.trim();
      const body = { outcome: btn.dataset.outcome };
      if (note) body.note = note;
      act(card, form, "decision", body);
    }
  });

  // Pressing the sign button leaves the focus, and a phone's keyboard, in
  // the field: a blur would validate a number not yet typed.
  document.addEventListener("mousedown", (ev) => {
    if (ev.target.closest && ev.target.closest("button[data-sign]")) ev.preventDefault();
  });

  // On a single choice, writing something else clears the option chosen
  // (what is written replaces it), and tapping the chosen option again
  // clears it, so that the question can be left unanswered again; so does
  // tapping an optional boolean's Yes or No again.
  document.addEventListener("input", (ev) => {
    if (!ev.target.classList.contains("custom") || ev.target.value.trim() === "") return;
    const fs = ev.target.closest("fieldset.q");
    const rs = fs ? choices(fs) : [];
    if (!rs.length) return;
    for (const r of rs) r.checked = false;
    fieldError(fs, "");
  });
  // clearable are the radios of fs that tapping again clears: a single
  // choice's options, and an optional boolean's Yes and No.
  function clearable(fs) {
    if (!fs) return [];
    if (fs.dataset.type === "boolean") {
      return fs.hasAttribute("data-required") ? [] : [...fs.querySelectorAll(".opts.two input[type=radio]")];
    }
    return choices(fs);
  }
  // A tap clears the option chosen by the tap just before it only when it
  // is not the second half of a double tap, as Dismiss counts taps.
  let wasChecked = null;
  document.addEventListener("pointerdown", (ev) => {
    const r = ev.target.closest && ev.target.closest("label.opt");
    const input = r && r.querySelector("input[type=radio]");
    wasChecked = input && input.checked && clearable(input.closest("fieldset.q")).includes(input) &&
      Date.now() - Number(input.dataset.chosenAt || 0) >= doubleTap ? input : null;
  });
  document.addEventListener("change", (ev) => {
    const r = ev.target;
    if (r instanceof HTMLInputElement && r.type === "radio" && r.checked) r.dataset.chosenAt = String(Date.now());
  });
  // With a keyboard, Delete or Backspace on the chosen option clears it.
  document.addEventListener("keydown", (ev) => {
    const r = ev.target;
    if ((ev.key !== "Delete" && ev.key !== "Backspace") || !(r instanceof HTMLInputElement) || r.type !== "radio" || !r.checked) return;
    if (!clearable(r.closest("fieldset.q")).includes(r)) return;
    ev.preventDefault();
    r.checked = false;
  });
  document.addEventListener("click", (ev) => {
    // A tap on the label clicks its radio in turn: only that click counts.
    if (!(ev.target instanceof HTMLInputElement) || ev.target.type !== "radio") return;
    if (ev.target === wasChecked) ev.target.checked = false;
    wasChecked = null;
  });

  // Choosing or writing something clears "choose or write".
  document.addEventListener("input", (ev) => {
    const fs = ev.target.closest && ev.target.closest("fieldset.q");
    const e = fs && fs.querySelector(".err");
    if (e && e.textContent === chooseOrWrite) fieldError(fs, "");
  });

  // Inline validation of typed and required fields as they are typed.
  document.addEventListener("input", (ev) => {
    const fs = ev.target.closest("fieldset.q[data-type], fieldset.q[data-required]");
    if (fs && fs.querySelector('[aria-invalid="true"]')) validate(fs);
  });
  document.addEventListener("focusout", (ev) => {
    const fs = ev.target.closest && ev.target.closest("fieldset.q[data-type], fieldset.q[data-required]");
    if (fs && ev.target.classList.contains("custom")) validate(fs);
  });

  // Live updates.
  const liveEl = document.getElementById("live");
  function live(on) {
    if (!liveEl) return;
    liveEl.classList.toggle("off", !on);
    liveEl.textContent = on ? "Live" : "Reconnecting…";
  }

  // Lists are read as changes come, and two reads can cross: applied
  // after a newer one, the older would put back a card gone since (one
  // just answered, say). Each read is numbered, and one older than the
  // list shown is dropped.
  let listsRead = 0, listShown = 0;
  // A card that ended on this page (showOutcome) leaves it about 3 s
  // later, whatever the lists say: a read started before it ended, slower
  // than that, would put it back. endedAt keeps, by id, how many reads
  // had started when it ended; such a card is dropped from any read
  // started before, and forgotten once a list read after is shown.
  const endedAt = new Map();

  async function refreshInbox() {
    const n = ++listsRead;
    const res = await fetch(root + "/web/cards", { credentials: "same-origin" });
    if (res.status === 401) { location.reload(); return; }
    if (!res.ok) return;
    const html = await res.text();
    if (n < listShown) return;
    listShown = n;
    for (const [id, at] of endedAt) if (at < n) endedAt.delete(id);
    const tpl = document.createElement("template");
    tpl.innerHTML = html; // server-rendered by html/template: escaped
    const list = document.getElementById("cards");
    const fresh = [...tpl.content.querySelectorAll(".card")].filter((c) => !endedAt.has(c.dataset.id));
    const ids = new Set(fresh.map((c) => c.dataset.id));
    for (const c of list.querySelectorAll(".card")) {
      if (ids.has(c.dataset.id) || c.classList.contains("done") || c.classList.contains("leaving")) continue;
      // Being sent from here: its reply says how it ended (on a slow
      // network, after the list has it gone).
      if (c.querySelector("form[data-busy]")) continue;
      if (c.dataset.touched) {
        // Ended elsewhere while the person was filling it in: say how,
        // rather than take it away without a word.
        c.dataset.touched = "";
        showEnded(c);
        continue;
      }
      leave(c);
    }
    // Insert new cards in order; cards already shown keep what was typed.
    let prev = null;
    for (const c of fresh) {
      const cur = document.getElementById("req-" + c.dataset.id);
      if (cur) { prev = cur; continue; }
      localTimes(c);
      if (prev) prev.after(c);
      else list.prepend(c);
      prev = c;
    }
  }

  // signedInAs shows whom the page answers as once its link grants
  // nothing and the browser's session took over its stream and answers:
  // not the chat person the link named.
  function signedInAs(name) {
    const top = document.querySelector("header.top");
    if (!top) return;
    let who = top.querySelector(".who");
    if (!who) {
      who = document.createElement("span");
      who.className = "who";
      top.append(who);
    }
    who.textContent = name;
    who.title = "signed in as";
  }

  // stream keeps a live stream open. EventSource reconnects by itself
  // after a dropped connection, but gives up for good when the bridge
  // answers a reconnect with an error status (503 while Redis is away, 401
  // once the session ended): then a new one is opened after a pause that
  // grows to 30 s. onRefused runs first: the inbox reloads into the
  // sign-in page when the session has ended, a request's page into its
  // "expired" page when its link has.
  // It returns a function that closes the stream for good.
  // A page holds one stream at most, open or on its way (the bridge caps
  // them: TOO_MANY_STREAMS): a wake (below) replaces the stream, and a
  // retry it overtook, its onRefused still running, opens none.
  function stream(url, onChange, onRefused) {
    if (!window.EventSource) return () => {};
    let pause = 1000, es = null, timer = 0, stopped = false;
    let woken = 0; // wakes so far: a retry from before the last one is stale
    const open = () => {
      if (stopped) return;
      if (es) es.close();
      const s = es = new EventSource(url);
      s.addEventListener("open", () => { live(true); pause = 1000; });
      s.addEventListener("change", (ev) => { live(true); onChange(ev.data); });
      s.addEventListener("by", (ev) => signedInAs(ev.data));
      s.addEventListener("error", () => {
        live(false);
        if (s.readyState !== EventSource.CLOSED) return; // it reconnects itself
        const since = woken;
        timer = setTimeout(() => {
          Promise.resolve(onRefused && onRefused()).catch(() => {}).then(() => { if (since === woken) open(); });
        }, pause);
        pause = Math.min(pause * 2, 30000);
      });
    };
    // A phone that locks, or leaves the browser, freezes the page and may
    // kill the stream's connection without it hearing of it (iOS Safari),
    // or keep the page to show again (back-forward cache): the page looks
    // live and is not. Back in view, it opens the stream anew, whose first
    // event says what changed meanwhile.
    const wake = () => {
      if (stopped || document.visibilityState !== "visible") return;
      woken++;
      clearTimeout(timer);
      if (es) es.close();
      pause = 1000;
      open();
    };
    document.addEventListener("visibilitychange", wake);
    window.addEventListener("pageshow", (ev) => { if (ev.persisted) wake(); });
    open();
    return () => { stopped = true; clearTimeout(timer); if (es) es.close(); };
  }

  localTimes(document);
  if (page === "inbox") {
    // A card the person has begun to fill in is marked: should it end
    // elsewhere meanwhile, it says how before it goes (refreshInbox).
    for (const type of ["input", "change"]) {
      document.addEventListener(type, (ev) => {
        const c = ev.target.closest && ev.target.closest(".card");
        if (c) c.dataset.touched = "1";
      });
    }
    stream(root + "/web/events", () => { refreshInbox().catch(() => live(false)); }, refreshInbox);
  } else if (page === "request") {
    const id = document.body.dataset.id;
    const q = new URLSearchParams(location.search);
    const p = new URLSearchParams({ id });
    if (q.get("l")) p.set("l", q.get("l"));
    else if (q.get("e")) { p.set("e", q.get("e")); p.set("s", q.get("s")); if (q.get("p")) p.set("p", q.get("p")); }
    const busy = () => {
      const card = document.getElementById("req-" + id);
      return card && card.querySelector("form[data-busy]");
    };
    // An ended request's page has nothing more to learn: it opens no
    // stream, and closes its own once it shows how the request ended
    // (showOutcome), rather than hold a connection while the tab is open.
    if (liveEl) stopStream = stream(root + "/web/events?" + p.toString(), (status) => {
      const card = document.getElementById("req-" + id);
      if (status === "pending" || !card || card.classList.contains("done")) return;
      // Being sent from here: a reload would cut the send off, and its
      // reply says how the request ended (act).
      if (busy()) { card.dataset.ended = "1"; return; }
      location.reload();
    }, async () => {
      // The stream was refused: when the page is too, its link has
      // expired (410) or its session ended (401), and a reload says so.
      const res = await fetch(location.href, { method: "HEAD", credentials: "same-origin", cache: "no-store" });
      if ((res.status === 401 || res.status === 410) && !busy()) location.reload();
    });
  }
  document.documentElement.dataset.ready = "1";
})();
