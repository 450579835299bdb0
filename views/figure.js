// One figure viz/ built, drawn in the browser (a Streamlit components v2 component, views/widgets.py chart): every
// chart of the page that is not one of the browser-drawn views. It is drawn with the plotly.js the views share
// (views/instant.py serve_plotly: loaded once a page) as soon as it arrives, in the page's look (explorer.js themed),
// with the same toolbar camera as theirs. Streamlit's own chart element loaded its 4.7 MB bundle on a page's first
// chart and drew a view's charts one after another (bench/open_speed.py).
//
// data.width: "stretch" (the chart as wide as its column, narrowed and widened with the window) or "content" (the
// figure's own width, narrowed to the column as the maps are: explorer.js fitted).
//
// Uses of the framework (views/explorer.js): Explorer.mount; view.chart, view.plot, view.listen, view.redraw.

function figure({data, parentElement}) {
  const fig = JSON.parse(data.figure);
  const stretch = data.width !== "content";
  if (stretch) delete fig.layout.width;  // Plotly fills the chart's div, which is as wide as the column
  // As in Streamlit's chart theme: no vertical grid lines unless the figure asks for them (they ran through the
  // numbers printed on bars), and every axis makes room for its labels (a second y axis's title on the right edge).
  for (const name of new Set(["xaxis", ...Object.keys(fig.layout).filter((n) => /^[xy]axis\d*$/.test(n))])) {
    fig.layout[name] = {automargin: true, ...(name[0] === "x" ? {showgrid: false} : {}), ...(fig.layout[name] || {})};
  }
  return Explorer.mount(parentElement, data, {name: "figure", pick: {}, build, draw});

  function build(view) {
    const chart = view.chart("figure");
    view.box.append(chart);
    view.listen(window, "resize", () => {
      chart.explorerShown = null;  // resized here, not by view.plot: a later visit draws it anew
      return stretch ? view.Plotly.Plots.resize(chart) : view.redraw();
    });
    return {chart};
  }

  function draw(view) {
    return view.plot(view.parts.chart, fig, data.file, stretch ? null : {rescale: true});
  }
}

export default figure;
