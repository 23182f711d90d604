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
// chart was built (widgets.figures.FigureWidget). The kernel answers "welcome"; a chart that never
// hears it cannot hear the kernel, and says so ("deaf"), so that the kernel replaces it.
const FRONT_END = "__FRONT_END__";
const WELCOME_S = 10;

export default () => {
  let chart; // Plotly's widget for this model, listening
  return {
    initialize({ model }) {
      let welcomed = false;
      model.on("msg:custom", (content) => {
        if (!content || content.kind !== "scanlab-welcome") return;
        welcomed = true;
        model.send({ kind: "scanlab-heard" });
      });
      chart = import(FRONT_END).then(async ({ default: define }) => {
        const widget = define();
        await widget.initialize({ model });
        model.send({ kind: "scanlab-hello" });
        setTimeout(() => welcomed || model.send({ kind: "scanlab-deaf" }), WELCOME_S * 1000);
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
