// widgets/access.py: names, roles and keyboard access that ipywidgets' own views leave out, given to
// every view on the page as it appears (a MutationObserver), in Voila and in JupyterLab alike.
//
// - A slider's handle (noUiSlider's role="slider") gets its label as its name ("lr, learning rate,
//   0.0001 to 10 (log scale)") and the readout's text as its value: a log slider's handle would
//   otherwise announce the exponent (-2 for lr = 0.01).
// - The Play widget's icon buttons get the names their icons stand for.
// - An accordion's header (a <div> with a click handler) becomes a button: focusable, named by its
//   title, with aria-expanded, opened by Enter or Space.
// - Voila's content panel becomes the page's main landmark.
// It reads and writes only attributes of ipywidgets' rendered elements, found by their documented
// CSS classes; tests/test_accessibility.py runs axe-core on the page and fails when a release
// changes them.

const STYLE = `
.widget-slider .noUi-handle:focus-visible, .jupyter-button:focus-visible,
.widget-readout:focus-visible, .jupyter-widget-Collapse-header:focus-visible,
.widget-toggle-button:focus-visible, .widget-dropdown select:focus-visible,
.widget-text input:focus-visible, .widget-toggle-buttons button:focus-visible, a:focus-visible {
  outline: 3px solid #1a5fb4 !important; outline-offset: 2px;
}
.jupyter-widget-Collapse-header { color: #333 !important; }
`;

const PLAY_NAMES = { "fa-play": "Play", "fa-pause": "Pause", "fa-stop": "Stop", "fa-retweet": "Repeat" };

function sliderName(slider) {
  const label = slider.querySelector(":scope > .widget-label");
  if (!label) return null;
  const text = label.textContent.trim();
  const hint = label.getAttribute("title") || slider.getAttribute("title") || "";
  return hint ? `${text}, ${hint}` : text;
}

function set(element, name, value) {
  if (value && element.getAttribute(name) !== value) element.setAttribute(name, value);
}

function label(root) {
  // Voila's page has a banner and a footer but no main landmark around the notebook's content.
  const content = document.body.dataset.voila && document.getElementById("jp-main-content-panel");
  if (content && !document.querySelector("main, [role=main]")) content.setAttribute("role", "main");
  for (const slider of root.querySelectorAll(".widget-slider")) {
    const name = sliderName(slider);
    const readout = slider.querySelector(".widget-readout");
    for (const handle of slider.querySelectorAll(".noUi-handle")) {
      set(handle, "aria-label", name);
      if (readout) set(handle, "aria-valuetext", readout.textContent.trim());
    }
    if (readout) {
      set(readout, "role", "textbox");
      set(readout, "aria-label", name && `${name}: type a value`);
    }
  }
  for (const button of root.querySelectorAll(".widget-play button")) {
    const icon = button.querySelector("i.fa");
    const kind = icon && [...icon.classList].find((c) => c in PLAY_NAMES);
    if (kind) {
      set(button, "aria-label", PLAY_NAMES[kind]);
      set(button, "title", PLAY_NAMES[kind]);
    }
  }
  // Font Awesome draws its icons as text: unhidden, a caret's glyph would be read as part of a name.
  for (const icon of root.querySelectorAll(".jupyter-widget-Collapse-header i.fa, .widget-play i.fa")) {
    set(icon, "aria-hidden", "true");
  }
  for (const header of root.querySelectorAll(".jupyter-widget-Collapse-header")) {
    set(header, "role", "button");
    set(header, "tabindex", "0");
    const open = header.parentElement && header.parentElement.classList.contains("jupyter-widget-Collapse-open");
    set(header, "aria-expanded", open ? "true" : "false");
    if (!header.dataset.scanlabKeys) {
      header.dataset.scanlabKeys = "1";
      header.addEventListener("keydown", (event) => {
        if (event.key === "Enter" || event.key === " ") {
          event.preventDefault();
          header.click();
        }
      });
    }
  }
}

function install() {
  if (window.__scanlabAccess) return;
  window.__scanlabAccess = true;
  const style = document.createElement("style");
  style.textContent = STYLE;
  document.head.appendChild(style);
  let queued = false;
  const run = () => {
    queued = false;
    label(document);
  };
  // One pass per frame however many nodes changed (a slider move changes a readout and a handle).
  new MutationObserver(() => {
    if (!queued) {
      queued = true;
      requestAnimationFrame(run);
    }
  }).observe(document.body, {
    subtree: true,
    childList: true,
    characterData: true,
    attributes: true,
    attributeFilter: ["aria-valuetext", "class"],
  });
  run();
}

export default {
  initialize() {
    if (document.body) install();
    else window.addEventListener("DOMContentLoaded", install, { once: true });
  },
  // A hidden view in each of the explorer's outputs: it tells the kernel which widget manager shows
  // that output (widgets/batch.py: where each output has its own, the batch may not reach them all).
  render({ model }) {
    model.send({ kind: "__SHOWN__", frame: frameOf(model.widget_manager) });
  },
};
