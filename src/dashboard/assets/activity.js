/**
 * The Activity page: charts of the org's last hours (runs and units ended by status, drain rate,
 * outbox depth and lateness, rate-limit deferrals, reconciler passes for admin tokens) and of the
 * work-item metrics per day, from GET /api/v1/activity. Statuses are the API's keys, never spelled here.
 */
import { barChart, lineChart } from './charts.js';
import { el } from './dom.js';

/** Windows the page offers, in hours. */
const WINDOWS = [
  [6, 'Last 6 hours'],
  [24, 'Last 24 hours'],
  [72, 'Last 3 days'],
  [168, 'Last 7 days'],
];
const DEFAULT_HOURS = 24;
const METRICS_DAYS = 14;

/** Colours of outcomes the page knows; any other status takes the palette's. */
const STATUS_COLORS = { success: '#067647', partial_failed: '#a15c07', failed: '#b42318', cancelled: '#6b7280' };

function card(id, title) {
  const body = el('div', { id: `chart-${id}`, class: 'chart-box' });
  return { el: el('section', { class: 'card', 'aria-label': title }, body), body };
}

const seconds = (iso) => Math.floor(new Date(iso).getTime() / 1000);

/** Series of a count object per hour (`runs` or `units`), one per status key, in the API's order. */
function statusSeries(hours, field) {
  const keys = Object.keys(hours[0]?.[field] ?? {});
  return keys.map((k) => ({
    key: k,
    label: k.replace(/_/g, ' '),
    values: hours.map((h) => h[field][k]),
    color: STATUS_COLORS[k],
  }));
}

/** The UTC days of the metrics, and per day the integrations' rows. */
function metricsByDay(m) {
  const days = [];
  for (let t = Date.parse(`${m.first_day}T00:00:00Z`); t <= Date.parse(`${m.last_day}T00:00:00Z`); t += 86_400_000)
    days.push(new Date(t).toISOString().slice(0, 10));
  const rows = (day) => m.days.filter((d) => d.day === day);
  return { days, rows };
}

function sumOf(rows, field) {
  return rows.length ? rows.reduce((n, r) => n + r[field], 0) : null;
}

function drawHourly(boxes, a) {
  const x = a.hours.map((h) => seconds(h.start));
  const hourly = (key, title, yLabel, series) => ({ key, title, x, unit: 'hour', yLabel, series });
  barChart(boxes.runs, hourly('runs', 'Runs ended per hour, by status', 'runs', statusSeries(a.hours, 'runs')));
  barChart(boxes.units, hourly('units', 'Units ended per hour, by status', 'units', statusSeries(a.hours, 'units')));
  lineChart(
    boxes.drain,
    hourly('drain', 'Drain rate', 'units per minute', [
      { key: 'units_per_minute', label: 'units ended per minute', values: a.hours.map((h) => h.units_per_minute) },
    ]),
  );
  lineChart(
    boxes.outbox,
    hourly('outbox', 'Outbox depth (largest sampled per hour)', 'rows', [
      { key: 'pending_max', label: 'pending', values: a.hours.map((h) => h.outbox?.pending_max ?? null) },
      { key: 'due_max', label: 'due', values: a.hours.map((h) => h.outbox?.due_max ?? null) },
    ]),
  );
  lineChart(
    boxes.lateness,
    hourly('lateness', 'Oldest due outbox row (largest age sampled per hour)', 'seconds', [
      {
        key: 'oldest_due_age_seconds_max',
        label: 'age of the oldest due row',
        values: a.hours.map((h) => h.outbox?.oldest_due_age_seconds_max ?? null),
        color: '#a15c07',
      },
    ]),
  );
  barChart(
    boxes.deferrals,
    hourly('deferrals', 'Rate-limit deferrals per hour (units that ended)', 'deferrals', [
      {
        key: 'rate_limit_deferrals',
        label: 'deferrals',
        values: a.hours.map((h) => h.rate_limit_deferrals),
        color: '#a15c07',
      },
    ]),
  );
  if (!a.includes_system) return;
  lineChart(
    boxes.reconciler,
    hourly('reconciler', 'Reconciler passes per hour (every org)', 'passes', [
      { key: 'passes', label: 'passes', values: a.hours.map((h) => h.reconciler.passes) },
      { key: 'errors', label: 'with errors', values: a.hours.map((h) => h.reconciler.errors), color: '#b42318' },
    ]),
  );
}

function drawDaily(boxes, m) {
  const { days, rows } = metricsByDay(m);
  const x = days.map((d) => seconds(`${d}T00:00:00Z`));
  const counts = [
    ['items_created', 'created'],
    ['items_completed', 'completed'],
    ['wip', 'open (WIP)'],
  ];
  lineChart(boxes.items, {
    key: 'items',
    title: 'Work items per day (every integration)',
    x,
    unit: 'day',
    yLabel: 'items',
    series: counts.map(([key, label]) => ({ key, label, values: days.map((d) => sumOf(rows(d), key)) })),
  });
  const integrations = [...new Map(m.days.map((r) => [r.integration_id, r.integration_name])).entries()];
  const times = [
    ['cycle_time_p50_hours', 'cycle time p50'],
    ['cycle_time_p90_hours', 'cycle time p90'],
    ['pr_time_to_merge_p50_hours', 'time to merge p50'],
  ];
  lineChart(boxes.times, {
    key: 'times',
    title: 'Cycle time and time to merge per day',
    x,
    unit: 'day',
    yLabel: 'hours',
    series: integrations.flatMap(([id, name]) =>
      times.map(([key, label]) => ({
        key: integrations.length > 1 ? `${id}:${key}` : key,
        label: integrations.length > 1 ? `${name}: ${label}` : label,
        values: days.map((d) => rows(d).find((r) => r.integration_id === id)?.[key] ?? null),
      })),
    ),
  });
}

/**
 * The page: `api(method, path)` is the dashboard's authenticated call, `params` the hash's query.
 * Charts are redrawn only when the answer changed.
 */
export function activityView(api, params) {
  const asked = Number(params?.get('hours'));
  const hours = WINDOWS.some(([h]) => h === asked) ? asked : DEFAULT_HOURS;
  const window = el(
    'select',
    { id: 'activity-window', name: 'hours' },
    WINDOWS.map(([h, label]) => {
      const o = el('option', { value: h }, label);
      o.selected = h === hours;
      return o;
    }),
  );
  window.addEventListener('change', () => (location.hash = `#/activity?hours=${window.value}`));
  const cards = Object.fromEntries(
    [
      ['runs', 'Runs'],
      ['units', 'Units'],
      ['drain', 'Drain rate'],
      ['deferrals', 'Rate-limit deferrals'],
      ['outbox', 'Outbox depth'],
      ['lateness', 'Outbox lateness'],
      ['reconciler', 'Reconciler passes'],
      ['items', 'Work items'],
      ['times', 'Cycle time and time to merge'],
    ].map(([id, title]) => [id, card(id, title)]),
  );
  cards.reconciler.el.hidden = true;
  const note = el('p', { class: 'muted', id: 'activity-note' });
  const el_ = el(
    'section',
    { 'aria-labelledby': 'page-title' },
    el(
      'div',
      { class: 'page-head' },
      el('h1', { id: 'page-title', tabindex: '-1' }, 'Activity'),
      el('div', { class: 'field' }, el('label', { for: 'activity-window' }, 'Window'), window),
    ),
    note,
    el(
      'div',
      { class: 'grid two charts' },
      Object.values(cards)
        .slice(0, 7)
        .map((c) => c.el),
    ),
    el('h2', { class: 'section-title' }, 'Work-item metrics per day'),
    el('div', { class: 'grid two charts' }, cards.items.el, cards.times.el),
  );
  const boxes = Object.fromEntries(Object.entries(cards).map(([k, c]) => [k, c.body]));
  let last = null;

  async function refresh() {
    const a = await api('GET', `/api/v1/activity?hours=${hours}&days=${METRICS_DAYS}`);
    const text = JSON.stringify({ ...a, until: null });
    if (text === last) return;
    last = text;
    note.textContent =
      `Hourly, from ${new Date(a.since).toLocaleString()}; outbox depth is sampled by the reconciler once a ` +
      `minute. Daily metrics ${a.work_item_metrics.first_day} to ${a.work_item_metrics.last_day} (UTC).`;
    cards.reconciler.el.hidden = !a.includes_system;
    drawHourly(boxes, a);
    drawDaily(boxes, a.work_item_metrics);
  }
  return { name: 'activity', title: 'Activity', el: el_, refresh };
}
