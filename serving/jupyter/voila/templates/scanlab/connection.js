// The page's connection to its kernel, kept and told (docs/design.md, "When the connection drops").
// The library Voila bundles retries a dropped socket after random waits that double each try (to a
// minute), saying nothing. Here, while the socket is down, the page asks the server about once a
// second whether its kernel is there (GET api/kernels/<id>): yes, reconnect now; 404, say it
// stopped and offer a reload of the share link; no answer, say the server cannot be reached. After
// a reconnect the widget manager fetches every widget's state; the notice stays until it has.
(() => {
  const GRACE_MS = 700; // a reconnect quicker than this says nothing
  const PROBE_MS = 1000; // how often a page without its socket asks (x 0.75 to 1.25, so a class spreads)
  const SLOW_AFTER_MS = 60_000; // then every 3 s, until the server answers
  const RECONNECT_GAP_MS = 3000; // a connection attempt is given this long before the next
  const CATCH_UP_MS = 10_000; // the most the "bringing up to date" notice waits for the manager
  const WORD_MS = 8000; // how long a word about a lost change stays
  const UNSTICK_AFTER_MS = 3000; // after the manager has the kernel's state (unstick.js)
  const STOPPED =
    "The dashboard's kernel stopped, so the controls no longer respond. Reload to start again " +
    "with the settings shown.";
  const GONE =
    "The dashboard's kernel stopped: the server ended it or restarted. Reload to start again with " +
    "the settings shown.";
  const RECONNECTING =
    "Connection to the server lost: reconnecting. The charts show the run from before it dropped; " +
    "moves made now are sent when it is back.";
  const CATCHING_UP = "Connected again: bringing the page up to date.";
  const UNREACHABLE =
    "The server cannot be reached (the network or the server is down). The charts show the last " +
    "run received; this page reconnects by itself when the server answers.";

  let leaving = false;
  window.addEventListener("beforeunload", () => { leaving = true; });

  // Voila's app once it has started (Voila sets window.jupyterapp then), looked for 2 minutes.
  const started = new Promise((resolve) => {
    const find = (tries) => {
      if (window.jupyterapp) resolve(window.jupyterapp);
      else if (tries > 0) setTimeout(find, 250, tries - 1);
    };
    find(4 * 120);
  });

  const PRESENTATION = ["view", "hide", "token"]; // what a link says beyond the run (widgets/settings.py)
  // The share link, when it names this page (same origin and path), with what the page's own
  // address says beyond the run (its view, what it hides); else the page's own address.
  const reloadTarget = () => {
    const field = document.querySelector(".scanlab-share input[type=text]");
    try {
      const url = new URL(field ? field.value : "", window.location.href);
      if (field && field.value && url.origin === window.location.origin &&
          url.pathname === window.location.pathname) {
        for (const [key, value] of new URLSearchParams(window.location.search)) {
          if (PRESENTATION.includes(key) && !url.searchParams.has(key)) url.searchParams.append(key, value);
        }
        return url.href;
      }
    } catch (error) { /* not a URL: the page's own address */ }
    return window.location.href;
  };

  const stopped = (words) => {
    hideBanner();
    if (leaving || document.querySelector(".scanlab-kernel-stopped")) return;
    const notice = document.createElement("div");
    notice.className = "scanlab-kernel-stopped";
    notice.setAttribute("role", "alert");
    const text = document.createElement("span");
    text.textContent = words;
    const reload = document.createElement("button");
    reload.textContent = "Reload";
    reload.addEventListener("click", () => window.location.assign(reloadTarget()));
    notice.append(text, reload);
    document.body.classList.add("scanlab-stopped");
    document.body.prepend(notice);
  };

  let banner = null;
  const showBanner = (words) => {
    if (leaving || document.querySelector(".scanlab-kernel-stopped")) return;
    if (!banner) {
      banner = document.createElement("div");
      banner.className = "scanlab-reconnecting";
      banner.setAttribute("role", "status");
      document.body.prepend(banner);
      document.body.classList.add("scanlab-offline");
    }
    if (banner.textContent !== words) banner.textContent = words;
  };
  function hideBanner() {
    if (banner) banner.remove();
    banner = null;
    document.body.classList.remove("scanlab-offline");
  }

  // Each slider's readout by its label.
  const readouts = () => {
    const out = {};
    for (const slider of document.querySelectorAll(".widget-slider")) {
      const label = slider.querySelector("label");
      const field = slider.querySelector(".widget-readout");
      if (label && field) out[label.textContent.trim()] = field.textContent.trim();
    }
    if (document.querySelector(".widget-play")) out.play = "";
    return out;
  };

  const probe = async (kernel) => {
    const settings = kernel.serverSettings;
    const url = `${settings.baseUrl.replace(/\/?$/, "/")}api/kernels/${encodeURIComponent(kernel.id)}`;
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), 4000);
    try {
      const response = await fetch(url, {
        cache: "no-store",
        credentials: "same-origin",
        headers: settings.token ? { Authorization: `token ${settings.token}` } : {},
        signal: abort.signal,
      });
      return response.status === 404 ? "gone" : "answers";
    } catch (error) {
      return "unreachable";
    } finally {
      clearTimeout(timer);
    }
  };

  const keep = (manager, kernel) => {
    let connected = kernel.connectionStatus === "connected";
    let lostAt = 0; // when the socket went, while it is down
    let timer = null;
    let asked = -Infinity; // when reconnect() was last called
    let over = false; // the kernel is gone: nothing more to try
    let caughtUp = null; // until the manager's state is the kernel's again after a reconnect
    let waiting = Promise.resolve(new Map()); // the models' unanswered messages then (unstick.js)
    const current = () => {
      clearTimeout(caughtUp);
      caughtUp = null;
      manager.restored.disconnect(current);
      if (kernel.connectionStatus === "connected" && !lostAt) hideBanner();
      // An answer may still come a moment after the manager's: only then is a message lost.
      const noted = waiting;
      setTimeout(() => unstick(noted), UNSTICK_AFTER_MS);
    };
    const unstick = async (noted) => {
      const lost = window.scanlabUnstick(await noted);
      if (kernel.connectionStatus !== "connected" || lostAt) return;
      // A control whose last change was lost on the way: the kernel's state put it back; say so.
      const now = readouts();
      const back = lost.map((model) => model.get("description")).filter((name) => name && name in now);
      if (back.length === 0) return hideBanner();
      const told = (name) => name === "play" ? `Play stopped at step ${now.step}` : `${name} is back at ${now[name]}`;
      showBanner(back.map(told).join(", ") + ": the change did not reach the server before the connection dropped.");
      setTimeout(() => banner && banner.textContent.includes("did not reach") && hideBanner(), WORD_MS);
    };

    const down = () => !leaving && !over && !kernel.isDisposed && kernel.connectionStatus !== "connected";
    const schedule = (ms) => {
      clearTimeout(timer);
      const every = performance.now() - lostAt > SLOW_AFTER_MS ? 3 * PROBE_MS : PROBE_MS;
      timer = setTimeout(check, ms !== undefined ? ms : every * (0.75 + Math.random() / 2));
    };
    const check = async () => {
      timer = null;
      if (!down()) return;
      const found = await probe(kernel);
      if (!down()) return;
      if (found === "gone") {
        over = true;
        stopped(GONE);
        return;
      }
      if (performance.now() - lostAt > GRACE_MS) showBanner(found === "answers" ? RECONNECTING : UNREACHABLE);
      if (found === "answers" && performance.now() - asked > RECONNECT_GAP_MS) {
        asked = performance.now();
        kernel.reconnect().catch(() => {}); // "disconnected" again: the next check tries again
      }
      schedule();
    };
    const lost = () => {
      if (caughtUp !== null) { // dropped again before the page caught up
        clearTimeout(caughtUp);
        caughtUp = null;
        manager.restored.disconnect(current);
      }
      if (!lostAt) lostAt = performance.now();
      if (timer === null) schedule(GRACE_MS);
    };

    kernel.statusChanged.connect((_, status) => {
      if (["dead", "restarting", "autorestarting"].includes(status)) {
        over = true;
        stopped(STOPPED);
      }
    });
    kernel.connectionStatusChanged.connect((_, status) => {
      if (status === "connected") {
        const dropped = lostAt !== 0;
        connected = true;
        lostAt = 0;
        clearTimeout(timer);
        timer = null;
        if (dropped && caughtUp === null) {
          waiting = window.scanlabWaiting(manager).catch(() => new Map());
          showBanner(CATCHING_UP);
          manager.restored.connect(current);
          caughtUp = setTimeout(current, CATCH_UP_MS);
        } else if (caughtUp === null) hideBanner();
      } else if (connected) {
        lost(); // "connecting" after a drop, or "disconnected" once the library gives up
      } else if (status === "disconnected") {
        stopped(STOPPED); // never connected: nothing to come back to
      }
    });
    const now = () => {
      if (down() && connected) schedule(0);
    };
    window.addEventListener("online", now);
    document.addEventListener("visibilitychange", () => document.visibilityState === "visible" && now());
    if (kernel.status === "dead") stopped(STOPPED);
    else if (kernel.connectionStatus === "disconnected") stopped(STOPPED);
  };

  // Outputs whose widget the manager did not have once it had restored the kernel's widgets: their
  // place reads "Error displaying widget: model not found" for good (ipywidgets renders an output
  // once). Seen for the last cells' outputs of one page of a class of six arriving at once on a
  // loaded 2-core machine (docs/design.md, "An output without its widget"); the page is loaded
  // again, once: a new kernel, the same address.
  const MISSING = "Error displaying widget: model not found";
  const RELOADED = "scanlab-reloaded-for-missing-widgets";
  const complete = (manager) => {
    const look = (tries) => {
      const missing = [...document.querySelectorAll(".jupyter-widgets")].filter((node) => node.textContent === MISSING);
      if (missing.length === 0) {
        if (tries > 0) setTimeout(look, 1000, tries - 1);
        return;
      }
      const last = Number(window.sessionStorage.getItem(RELOADED) || 0);
      if (Date.now() - last < 10 * 60_000) return; // once: a page that fails again stays as it is
      window.sessionStorage.setItem(RELOADED, String(Date.now()));
      showBanner(`${missing.length} parts of this page did not load: loading it again.`);
      window.location.reload();
    };
    // The outputs render once Voila's app has started, after the manager's restore
    // (labextensions/scanlab-page), and a missing model shows 2 s later: a few looks from then.
    const restored = new Promise((resolve) => {
      if (manager.restoredStatus) resolve();
      else manager.restored.connect(function first() { manager.restored.disconnect(first); resolve(); });
    });
    Promise.all([restored, started]).then(() => look(5));
  };

  // ipywidgets' manager restores the page's widgets with one request for all their states; when the
  // page has not handled the answer 4 s after asking (its main thread starved), it asks each widget
  // instead, one request_state each (352 here), and waits for every answer with no time limit. Pages
  // of a class arriving at once, their CPU throttled 8x, lost the last answers of such a burst (23 or
  // 24 of 352, in at least 4 of 30 pages; the kernel had sent them) and drew no chart (docs/design.md,
  // "A page whose widgets never came"). A request still unanswered once nothing has answered for
  // REASK_MS is sent again, with the same message id: its answer is the one the manager waits for.
  const REASK_MS = 5000;
  const reask = (kernel) => {
    const unanswered = new Map(); // message id -> a request_state sent
    let heard = 0;
    kernel.anyMessage.connect((_, { msg, direction }) => {
      if (msg.header.msg_type !== "comm_msg") return;
      const data = msg.content && msg.content.data;
      if (direction === "send" && data && data.method === "request_state") {
        unanswered.set(msg.header.msg_id, msg);
        heard = performance.now();
      } else if (direction === "recv" && msg.parent_header && unanswered.delete(msg.parent_header.msg_id)) {
        heard = performance.now();
      }
    });
    const again = setInterval(() => {
      if (kernel.isDisposed) return clearInterval(again);
      if (!unanswered.size || kernel.connectionStatus !== "connected" || performance.now() - heard < REASK_MS) return;
      heard = performance.now();
      for (const msg of unanswered.values()) {
        try {
          // A new date: the kernel refuses a message signed exactly as one it had (a replay).
          kernel.sendShellMessage({ ...msg, header: { ...msg.header, date: new Date().toISOString() } }, false, true);
        } catch (error) {
          return; // the kernel is dead: the notice says so
        }
      }
    }, 1000);
  };

  let watched = false;
  const watch = (manager) => {
    if (watched) return;
    watched = true;
    reask(manager.kernel);
    keep(manager, manager.kernel);
    complete(manager);
  };
  // The manager as soon as it exists, from the page's plugin (labextensions/scanlab-page), which
  // holds Voila's app back until the manager has restored; else from the started app.
  window.addEventListener("scanlab-widget-manager", (event) => watch(event.detail));
  started.then((app) => app.widgetManager && app.widgetManager.kernel && watch(app.widgetManager));
})();
