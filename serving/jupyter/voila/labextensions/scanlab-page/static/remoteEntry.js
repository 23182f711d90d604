// A plugin of Voila's page: Voila's app starts, and so renders the cells' widget outputs, only once
// the widget manager has restored the kernel's widgets. Rendered before, an output can ask for its
// model during the restore, and ipywidgets' manager can give up on a model it then has ("widget
// model not found" for good: docs/design.md, "An output without its widget"). Lumino's start waits
// for every start-up plugin's activation; Voila's output plugin renders at `app.started`.
//
// Written by hand, not built by @jupyterlab/builder: it shares no module, so it only has to be what
// Voila's loader asks of a prebuilt extension (voila/src/tools.ts, loadComponent and createModule):
// a container at `_JUPYTERLAB[name]` with `init(shareScope)` and `get(module)`, which gives a
// factory of the module. tests/test_page_plugin.py checks that Voila loads and starts it.
(() => {
  const NAME = "scanlab-page";
  const WAIT_MS = 30_000; // the most the app's start waits (a restore that never ends is logged)
  const MANAGER_PLUGIN = "@voila-dashboards/voila:widget-manager8"; // ipywidgets 8's, in Voila 0.5

  // Resolves once the manager has restored the kernel's widgets, or its kernel has gone (the page
  // then says so: connection.js).
  const restored = (manager) =>
    new Promise((resolve) => {
      const kernel = manager.kernel;
      const gone = () => kernel.status === "dead" || kernel.connectionStatus === "disconnected";
      if (manager.restoredStatus || gone()) return resolve(true);
      const done = () => {
        if (!manager.restoredStatus && !gone()) return;
        manager.restored.disconnect(done);
        kernel.statusChanged.disconnect(done);
        kernel.connectionStatusChanged.disconnect(done);
        resolve(true);
      };
      manager.restored.connect(done);
      kernel.statusChanged.connect(done);
      kernel.connectionStatusChanged.connect(done);
    });

  const plugin = {
    id: `${NAME}:widgets-before-outputs`,
    description: "Voila renders the widget outputs once the widget manager has restored the kernel's widgets.",
    autoStart: true,
    activate: async (app) => {
      if (!("widgetManager" in app)) { // Voila 0.5's app (voila/src/app.ts); JupyterLab's has none
        if (app.name === "Voila") console.error(`${NAME}: this Voila's app has no widget manager`);
        return;
      }
      // Voila's manager plugin makes the manager, or none (a listing; a kernel gone before the
      // page's scripts ran): then there is nothing to wait for. A plugin already activating gives
      // its promise; Lumino activates each once.
      await app.activatePlugin(MANAGER_PLUGIN).catch(() => {});
      const manager = app.widgetManager;
      if (!manager) return;
      // connection.js keeps the kernel's connection from now, not from after the start: a restore
      // that lost answers needs its re-sends (connection.js, reask) to end.
      window.dispatchEvent(new CustomEvent("scanlab-widget-manager", { detail: manager }));
      let timer;
      const late = new Promise((resolve) => { timer = setTimeout(resolve, WAIT_MS, false); });
      const ended = await Promise.race([restored(manager), late]);
      clearTimeout(timer);
      if (!ended) console.warn(`${NAME}: no restore of the widgets after ${WAIT_MS} ms; starting`);
    },
  };

  window._JUPYTERLAB = window._JUPYTERLAB || {};
  window._JUPYTERLAB[NAME] = {
    init: () => Promise.resolve(),
    get: (module) =>
      module === "./extension"
        ? Promise.resolve(() => ({ __esModule: true, default: [plugin] }))
        : Promise.reject(new Error(`${NAME} has no module ${module}`)),
  };
})();
