// A file control for a CSV file: the browser reads the chosen file and sends its bytes to the
// kernel in one message (widgets/own_data.py). A file over `max_bytes` is refused here, unsent:
// a message that large could close the page's connection to its kernel.
export default {
  render({ model, el }) {
    const label = document.createElement("label");
    label.className = "scanlab-upload";
    const words = document.createElement("span");
    words.textContent = model.get("description");
    // The browser's own control says "No file chosen" once its value is cleared (below), while a
    // file is in use: it is hidden (still focusable, and named by the label) behind a button and
    // the kernel's word for the file in use.
    const input = document.createElement("input");
    input.type = "file";
    input.accept = ".csv,.tsv,.txt,text/csv,text/plain";
    const button = document.createElement("span");
    button.className = "scanlab-upload-button";
    button.textContent = "Choose a file…";
    const chosen = document.createElement("span");
    chosen.className = "scanlab-upload-chosen";
    label.append(words, input, button, chosen);
    el.append(label);
    const update = () => {
      input.disabled = model.get("disabled");
      chosen.textContent = model.get("chosen");
    };
    update();
    model.on("change:disabled change:chosen", update);
    input.addEventListener("change", async () => {
      const file = input.files && input.files[0];
      if (!file) return;
      const about = { name: file.name, size: file.size };
      if (file.size > model.get("max_bytes")) {
        model.send({ kind: "too_big", ...about });
      } else {
        const bytes = await file.arrayBuffer();
        model.send({ kind: "file", ...about }, undefined, [bytes]);
      }
      input.value = ""; // the same file chosen again is read again
    });
    return () => model.off("change:disabled change:chosen", update);
  },
};
