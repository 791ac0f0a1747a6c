/**
 * Charts for the dashboard, drawn by uPlot (served from the installed package as
 * /dashboard/vendor/uPlot.esm.js, its stylesheet beside it). Every chart is a <figure>: a caption,
 * the plot (hidden from assistive technology), a one-line summary and a visually hidden table with
 * every number, both linked to the figure, so the chart reads the same without sight.
 * uPlot styles its elements through the CSSOM only, which the page's `style-src 'self'` allows.
 */
import uPlot from './vendor/uPlot.esm.js';
import { el, pad } from './dom.js';

const HEIGHT = 220;
/** Drawn charts by container: redrawing one destroys the last. */
const drawn = new WeakMap();
let nextId = 0;

/** Colours for series that name none. */
export const PALETTE = ['#4338ca', '#067647', '#b42318', '#a15c07', '#175cd3', '#6b7280', '#9e3fb8'];

/** The label of an x value (seconds since the epoch), in local time: a day, or a day and an hour. */
export function xLabel(seconds, unit) {
  const d = new Date(seconds * 1000);
  const day = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
  return unit === 'day' ? day : `${day} ${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/** A number as the table and legend show it ('—' for none). */
export function numberText(v, digits = 2) {
  if (v === null || v === undefined || Number.isNaN(v)) return '—';
  return Number.isInteger(v) ? String(v) : v.toFixed(digits);
}

/** The visually hidden table: one row per x value, one column per series. */
function numbersTable(spec, id) {
  return el(
    'table',
    { class: 'visually-hidden chart-numbers', id },
    el('caption', null, `${spec.title}: the numbers`),
    el(
      'thead',
      null,
      el(
        'tr',
        null,
        el('th', { scope: 'col' }, spec.xTitle ?? (spec.unit === 'day' ? 'Day' : 'Hour')),
        spec.series.map((s) => el('th', { scope: 'col', 'data-series': s.key ?? s.label }, s.label)),
      ),
    ),
    el(
      'tbody',
      null,
      spec.x.map((x, i) =>
        el(
          'tr',
          { 'data-x': x },
          el('th', { scope: 'row' }, xLabel(x, spec.unit)),
          spec.series.map((s) => el('td', { 'data-series': s.key ?? s.label }, numberText(s.values[i]))),
        ),
      ),
    ),
  );
}

/** The one-line summary: each series' total (counts) or largest value (levels). */
export function summaryText(spec) {
  const span = spec.x.length ? `${xLabel(spec.x[0], spec.unit)} to ${xLabel(spec.x.at(-1), spec.unit)}` : 'no data';
  const parts = spec.series.map((s) => {
    const vs = s.values.filter((v) => v !== null && v !== undefined);
    if (vs.length === 0) return `${s.label}: no data`;
    if (spec.sum) return `${s.label} ${numberText(vs.reduce((a, b) => a + b, 0))} in all`;
    return `${s.label} at most ${numberText(Math.max(...vs))}`;
  });
  return `${spec.title} (${span}${spec.yLabel ? `, ${spec.yLabel}` : ''}): ${parts.join('; ')}.`;
}

/** Running sums of the series, bottom first (a stacked bar's tops). */
function stackedTops(series, length) {
  const tops = [];
  const acc = new Array(length).fill(0);
  for (const s of series) {
    for (let i = 0; i < length; i++) acc[i] += s.values[i] ?? 0;
    tops.push([...acc]);
  }
  return tops;
}

function plotOptions(spec, width, series) {
  return {
    width,
    height: HEIGHT,
    scales: { x: { time: true }, y: { range: (_u, min, max) => [Math.min(0, min), Math.max(1, max)] } },
    axes: [{}, { label: spec.yLabel ?? null, size: 56 }],
    legend: { show: true, live: true },
    cursor: { drag: { x: false, y: false } },
    series: [{ value: (_u, v) => (v === null ? '—' : xLabel(v, spec.unit)) }, ...series],
  };
}

/** Draws `spec` into `container` (replacing what was there) and returns the figure. */
function draw(container, spec, build) {
  drawn.get(container)?.destroy();
  const id = `chart-${++nextId}`;
  const plot = el('div', { class: 'chart-plot', 'aria-hidden': 'true' });
  const summary = el('p', { class: 'chart-summary', id: `${id}-summary` }, summaryText(spec));
  const figure = el(
    'figure',
    {
      class: 'chart',
      'data-chart': spec.key ?? null,
      'aria-labelledby': `${id}-title`,
      'aria-describedby': `${id}-summary ${id}-numbers`,
    },
    el('figcaption', { id: `${id}-title` }, spec.title),
    plot,
    summary,
    numbersTable(spec, `${id}-numbers`),
  );
  container.replaceChildren(figure);
  const { options, data } = build(Math.max(240, plot.clientWidth || container.clientWidth || 600));
  const chart = new uPlot(options, data, plot);
  const resize = new ResizeObserver(() => {
    const width = Math.max(240, plot.clientWidth);
    if (width !== chart.width) chart.setSize({ width, height: HEIGHT });
  });
  resize.observe(plot);
  drawn.set(container, {
    destroy() {
      resize.disconnect();
      chart.destroy();
    },
  });
  return figure;
}

/**
 * A line chart. `spec`: { key, title, x (seconds since the epoch), unit ('hour' | 'day'), yLabel,
 * series: [{ label, key?, values (null: no value), color? }], sum? (summary gives totals) }.
 */
export function lineChart(container, spec) {
  return draw(container, spec, (width) => {
    const series = spec.series.map((s, i) => ({
      label: s.label,
      stroke: s.color ?? PALETTE[i % PALETTE.length],
      width: 2,
      points: { show: spec.x.length <= 48 },
      value: (_u, v) => numberText(v),
      spanGaps: false,
    }));
    return { options: plotOptions(spec, width, series), data: [spec.x, ...spec.series.map((s) => s.values)] };
  });
}

/**
 * Stacked bars: the series stack bottom first; the legend and the table show each series' own
 * value. `spec` as for {@link lineChart}; the summary gives totals.
 */
export function barChart(container, spec) {
  const summed = { sum: true, ...spec };
  return draw(container, summed, (width) => {
    const tops = stackedTops(spec.series, spec.x.length);
    const bars = uPlot.paths.bars({ size: [0.7, 48], align: 0 });
    // Drawn top layer first, so each lower layer paints over the part of the bar below its top.
    const order = spec.series.map((_, i) => i).reverse();
    const series = order.map((i) => {
      const s = spec.series[i];
      const color = s.color ?? PALETTE[i % PALETTE.length];
      return {
        label: s.label,
        stroke: color,
        fill: color,
        width: 0,
        paths: bars,
        points: { show: false },
        value: (_u, _v, _si, idx) => (idx === null ? '—' : numberText(s.values[idx])),
      };
    });
    const options = plotOptions(summed, width, series);
    // Half a step of room each side, so the first and last bars are whole.
    const step = spec.x.length > 1 ? spec.x[1] - spec.x[0] : 3600;
    options.scales.x.range = (_u, min, max) => [min - step / 2, max + step / 2];
    return { options, data: [spec.x, ...order.map((i) => tops[i])] };
  });
}
