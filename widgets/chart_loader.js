// What anywidget loads for each served chart (widgets/figures.py: CHART_LOADER): a few lines that
// import the charts' front end (FRONT_END, which imports Plotly's 5 MB bundle) without waiting for it.
//
// anywidget gives a model 2 s from its creation to load its code and finish `initialize`; after that
// it refuses every message to the model for the rest of the page's life ("[anywidget] Failed to
// initialize model"). A page built while a class arrives took longer to load Plotly's bundle, and its
// charts then kept drawing their first run while the status line followed the controls. This module
// initializes at once; Plotly's code is loaded in the background and `render` waits for it.
//
// Messages that come before Plotly's model code listens are missed by its copy of the figure: the
// chart says "hello" once it listens, and the kernel then sends again whatever it changed since the
// chart was built (widgets.figures.ServedFigureWidget), then "welcome". A model anywidget refuses shows
// as a page error of anywidget's own words for each message refused. A chart that has not heard
// the welcome when such an error comes says it is "deaf", once, so that the kernel replaces it;
// a chart whose welcome was on its way costs a needless replacement, nothing more. (A time limit
// for the welcome replaced every chart of the pages of a loaded class, whose answers took longer.)
const FRONT_END = "__FRONT_END__";
const REFUSED = "[anywidget] Failed to initialize model";

export default () => {
  let chart; // Plotly's widget for this model, listening
  return {
    initialize({ model }) {
      let state = "loading"; // then "waiting" for the welcome, then "welcomed" or "deaf"
      const watching = new AbortController(); // the page's errors, watched until then
      model.on("msg:custom", (content) => {
        if (!content || content.kind !== "scanlab-welcome" || state === "welcomed") return;
        state = "welcomed";
        watching.abort();
        model.send({ kind: "scanlab-heard" });
      });
      const refused = (error) => {
        const words = error ? String(error.message || error) : "";
        if (state !== "waiting" || !words.includes(REFUSED)) return;
        state = "deaf";
        watching.abort();
        model.send({ kind: "scanlab-deaf" });
      };
      const { signal } = watching;
      window.addEventListener("unhandledrejection", (event) => refused(event.reason), { signal });
      window.addEventListener("error", (event) => refused(event.error || event.message), { signal });
      chart = import(FRONT_END).then(async ({ default: define }) => {
        const widget = define();
        await widget.initialize({ model });
        state = "waiting";
        model.send({ kind: "scanlab-hello" });
        return widget;
      });
      chart.catch((error) => console.error("ScanLab: the chart's code did not load:", error));
    },
    async render({ model, el }) {
      const widget = await chart;
      return widget.render({ model, el });
    },
  };
};
