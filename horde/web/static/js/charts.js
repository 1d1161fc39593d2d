// Line charts (the vendored uPlot) that a screen reader can read: the canvas carries an aria-label, and the same
// numbers follow in a visually hidden summary (and a table when they are few enough to read one by one).
import uPlot from "/ui/vendor/uplot/uPlot.esm.js";
import { el } from "./core.js";

const COLOURS = ["#3656d6", "#d9822b", "#2f9e6e", "#b5478a"];
const HEIGHT_PX = 220;
// The figure's padding (style.css figure.chart), left and right.
const FIGURE_PADDING_PX = 24;
// Past this many points the hidden summary gives figures, not a row per point.
const TABLE_MAX_POINTS = 60;

const charts = new Set();

// Draw into `figure` (emptied first). xs: seconds since the epoch; series: [{label, values}] (nulls: unknown).
// label: what the chart shows, for its aria-label and caption; daily: the x axis counts days, not minutes.
export function lineChart(figure, { label, xs, series, daily = false }) {
  for (const chart of charts) if (figure.contains(chart.root)) { chart.destroy(); charts.delete(chart); }
  figure.replaceChildren(el("figcaption", { text: label }));
  const width = Math.max(260, (figure.clientWidth || 320) - FIGURE_PADDING_PX);
  const options = {
    width, height: HEIGHT_PX,
    // From 0, and 0 to 1 while every value is 0 (rather than uPlot's 0 to 100).
    scales: { x: { time: true }, y: { range: (chart, min, max) => [Math.min(0, min), max > 0 ? max * 1.1 : 1] } },
    series: [{ label: daily ? "Day" : "Time" }, ...series.map((line, index) => ({
      label: line.label, stroke: COLOURS[index % COLOURS.length], width: 2, points: { show: daily },
    }))],
    axes: [{}, { size: 60 }],
    legend: { show: true },
  };
  const chart = new uPlot(options, [xs, ...series.map((line) => line.values)], figure);
  charts.add(chart);
  for (const canvas of chart.root.querySelectorAll("canvas")) {
    canvas.setAttribute("role", "img");
    canvas.setAttribute("aria-label", label + ": " + summary(xs, series, daily));
  }
  figure.append(hiddenNumbers(label, xs, series, daily));
  return chart;
}

// Keep every chart as wide as its figure when the window changes.
window.addEventListener("resize", () => {
  for (const chart of charts) {
    if (!chart.root.isConnected) { chart.destroy(); charts.delete(chart); continue; }
    const figure = chart.root.parentElement;
    chart.setSize({ width: Math.max(260, figure.clientWidth - FIGURE_PADDING_PX), height: HEIGHT_PX });
  }
});

function stamp(seconds, daily) {
  const iso = new Date(seconds * 1000).toISOString();
  return daily ? iso.slice(0, 10) : iso.slice(11, 16) + " UTC";
}

// One sentence per line: its total, its peak and when, its latest known value.
function summary(xs, series, daily) {
  return series.map((line) => {
    const known = line.values.map((value, index) => [value, index]).filter(([value]) => value !== null && value !== undefined);
    if (!known.length) return line.label + ": no data";
    const [peak, at] = known.reduce((best, item) => (item[0] > best[0] ? item : best));
    const total = known.reduce((sum, [value]) => sum + value, 0);
    const latest = known[known.length - 1][0];
    return line.label + ": total " + round(total) + ", peak " + round(peak) + " at " + stamp(xs[at], daily) + ", latest " + round(latest);
  }).join("; ");
}

function round(value) { return Number.isInteger(value) ? String(value) : value.toFixed(2); }

function hiddenNumbers(label, xs, series, daily) {
  const box = el("div", { class: "visually-hidden" }, el("p", { text: label + ". " + summary(xs, series, daily) + "." }));
  if (xs.length <= TABLE_MAX_POINTS) {
    const head = el("tr", {}, el("th", { scope: "col", text: daily ? "Day" : "Time" }), ...series.map((line) => el("th", { scope: "col", text: line.label })));
    const rows = xs.map((x, index) => el("tr", {}, el("th", { scope: "row", text: stamp(x, daily) }),
      ...series.map((line) => el("td", { text: line.values[index] === null ? "unknown" : String(line.values[index]) }))));
    box.append(el("table", {}, el("caption", { text: label }), el("thead", {}, head), el("tbody", {}, ...rows)));
  }
  return box;
}

// Days written "YYYY-MM-DD" as seconds since the epoch (midnight UTC).
export function daySeconds(day) { return Date.parse(day + "T00:00:00Z") / 1000; }
