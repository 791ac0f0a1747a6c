/**
 * The Budgets page: the org's shared rate-limit budgets per credential (GET /api/v1/rate-budgets):
 * remaining of limit until the reset, a limit response's lift time, the state in words (LIMITED,
 * EXHAUSTED — never colour alone), limit responses and deferrals over the last hour and day, the
 * units waiting on each; and one budget's remaining over time (GET …/:key/history) drawn by
 * charts.js into the `data-chart="budget-remaining"` element, whose samples it also carries.
 */
import { lineChart } from './charts.js';
import { el, localText, when } from './dom.js';

const HISTORY_HOURS = 24;
const STATE_TEXT = { limited: 'LIMITED', exhausted: 'EXHAUSTED', ok: 'OK', unknown: 'UNKNOWN' };
const STATE_HELP = {
  limited: 'a limit response: no calls until it lifts',
  exhausted: 'nothing remains before the reset',
  ok: 'requests remain',
  unknown: 'no remaining count reported',
};

function credentialCell(b) {
  const names = b.credential.integrations.map((i) => i.name);
  return el(
    'td',
    { 'data-field': 'credential' },
    el('div', null, names.length ? names.join(', ') : b.credential.label),
    el('div', { class: 'muted small' }, `${b.credential.kind.replace(/_/g, ' ')} · ${b.credential.label}`),
  );
}

function stateCell(b) {
  return el(
    'td',
    { 'data-field': 'state' },
    el('span', { class: `badge badge-budget-${b.state}`, title: STATE_HELP[b.state] }, STATE_TEXT[b.state]),
    el('div', { class: 'muted small', 'data-field': 'observed' }, 'observed ', when(b.observed_at)),
  );
}

function waitingCell(b) {
  const cell = el('td', { 'data-field': 'waiting' }, el('span', { 'data-field': 'waiting-units' }, b.waiting.units));
  if (b.waiting.units === 0) return cell;
  cell.append(' · next due ', when(b.waiting.next_due_at));
  const list = el(
    'ul',
    { class: 'plain' },
    b.waiting.shown.map((u) =>
      el(
        'li',
        { 'data-unit': u.id },
        el('a', { href: `#/runs/${u.sync_run_id}` }, u.dataset_key),
        ` — ${u.rate_limit_deferrals} deferrals, due `,
        when(u.available_at),
      ),
    ),
  );
  cell.append(el('details', null, el('summary', null, 'units'), list));
  return cell;
}

const pair = (field, w) => el('td', { 'data-field': field, class: 'num' }, `${w.last_hour} / ${w.last_day}`);

function budgetRow(b) {
  return el(
    'tr',
    { 'data-budget-key': b.key, 'data-state': b.state, class: b.state === 'ok' ? null : 'budget-alert' },
    el('td', { 'data-field': 'provider' }, b.provider),
    credentialCell(b),
    stateCell(b),
    el(
      'td',
      { class: 'num' },
      el('div', { 'data-field': 'remaining' }, `${b.remaining ?? '—'} / ${b.limit ?? '—'}`),
      el('div', { class: 'muted small', 'data-field': 'reset' }, 'resets ', when(b.reset_at)),
    ),
    el('td', { 'data-field': 'limited-until' }, when(b.limited_until)),
    pair('limit-responses', b.limit_responses),
    pair('deferrals', b.deferrals),
    waitingCell(b),
  );
}

function budgetTable(items) {
  if (items.length === 0)
    return el('p', { class: 'empty' }, 'No budget recorded yet: units record one on their first call.');
  const head = [
    'Provider',
    'Credential',
    'State',
    'Remaining / limit',
    'Limited until',
    'Limit responses (1 h / 24 h)',
    'Deferrals (1 h / 24 h)',
    'Units waiting',
  ];
  return el(
    'div',
    { class: 'table-wrap' },
    el(
      'table',
      { class: 'data', id: 'budgets-table' },
      el('caption', { class: 'visually-hidden' }, 'Rate-limit budgets per credential'),
      el(
        'thead',
        null,
        el(
          'tr',
          null,
          head.map((t) => el('th', { scope: 'col' }, t)),
        ),
      ),
      el('tbody', null, items.map(budgetRow)),
    ),
  );
}

/** The samples as a text table: what the chart shows, readable without it. */
function samplesTable(h) {
  return el(
    'table',
    { class: 'data compact', 'data-samples-of': h.key },
    el('caption', null, `Samples of ${h.provider} since ${localText(h.since)}`),
    el(
      'thead',
      null,
      el(
        'tr',
        null,
        ['Minute', 'Remaining', 'Limit', 'Limit responses'].map((t) => el('th', { scope: 'col' }, t)),
      ),
    ),
    el(
      'tbody',
      null,
      h.samples.map((s) =>
        el(
          'tr',
          { 'data-minute': s.minute },
          el('td', null, when(s.minute)),
          el('td', { class: 'num' }, s.remaining ?? '—'),
          el('td', { class: 'num' }, s.limit ?? '—'),
          el('td', { class: 'num' }, s.limit_responses),
        ),
      ),
    ),
  );
}

/** Draws the history into the chart element (the samples ride along as `data-samples`). */
function drawHistory(box, tableBox, h) {
  box.dataset.budgetKey = h.key;
  box.dataset.samples = JSON.stringify(h.samples.map((s) => [s.minute, s.remaining, s.limit]));
  const sec = (iso) => Math.floor(Date.parse(iso) / 1000);
  if (h.samples.length === 0) box.replaceChildren(el('p', { class: 'empty' }, 'No sample in the last 24 hours.'));
  else {
    // The window's two ends (no value) keep the time axis to the window, however few the samples.
    const x = [sec(h.since), ...h.samples.map((s) => sec(s.minute)), sec(h.until)];
    const values = (f) => [null, ...h.samples.map(f), null];
    lineChart(box, {
      title: `Remaining of ${h.provider} (${h.holder}), last ${HISTORY_HOURS} hours`,
      x,
      unit: 'hour',
      xTitle: 'Minute',
      yLabel: 'requests',
      series: [
        { key: 'remaining', label: 'remaining', values: values((s) => s.remaining) },
        { key: 'limit', label: 'limit', values: values((s) => s.limit) },
      ],
    });
  }
  tableBox.replaceChildren(el('details', null, el('summary', null, 'Samples as a table'), samplesTable(h)));
}

/** The budget whose history shows first: a limited or exhausted one, else the first. */
function defaultKey(items) {
  return (items.find((b) => b.state === 'limited' || b.state === 'exhausted') ?? items[0])?.key ?? null;
}

export function budgetsView(api) {
  const tableBox = el('div', { id: 'budgets' });
  const picker = el('select', { id: 'budget-history-key', name: 'budget' });
  const chart = el('div', { class: 'chart-box', 'data-chart': 'budget-remaining' });
  const samples = el('div', { id: 'budget-samples' });
  const historyCard = el(
    'section',
    { class: 'card', 'aria-labelledby': 'budget-history-title', hidden: '' },
    el('h2', { id: 'budget-history-title', class: 'section-title' }, 'Remaining over time'),
    el('div', { class: 'field' }, el('label', { for: 'budget-history-key' }, 'Budget'), picker),
    chart,
    samples,
  );
  const asOf = el('p', { class: 'muted', id: 'budgets-as-of' });
  const view = el(
    'section',
    { 'aria-labelledby': 'page-title' },
    el('div', { class: 'page-head' }, el('h1', { id: 'page-title', tabindex: '-1' }, 'Budgets')),
    el(
      'p',
      { class: 'muted' },
      'Shared rate-limit budgets per credential or GitHub App installation. LIMITED: a limit response has ' +
        'not lifted; EXHAUSTED: nothing remains before the reset. Units of those credentials wait (deferred) ' +
        'and run again when due.',
    ),
    asOf,
    tableBox,
    historyCard,
  );
  let lastList = null;
  let lastHistory = null;
  let chosen = null;
  picker.addEventListener('change', () => {
    chosen = picker.value;
    lastHistory = null;
    void refresh();
  });

  function fillPicker(items) {
    const key = items.some((b) => b.key === chosen) ? chosen : defaultKey(items);
    chosen = key;
    picker.replaceChildren(
      ...items.map((b) => {
        const names = b.credential.integrations.map((i) => i.name).join(', ') || b.credential.label;
        const o = el('option', { value: b.key }, `${b.provider} — ${names} (${STATE_TEXT[b.state]})`);
        o.selected = b.key === key;
        return o;
      }),
    );
  }

  async function refresh() {
    const list = await api('GET', '/api/v1/rate-budgets');
    asOf.textContent = `As of ${localText(list.as_of)}.`;
    const text = JSON.stringify(list.items);
    if (text !== lastList) {
      lastList = text;
      tableBox.replaceChildren(budgetTable(list.items));
      fillPicker(list.items);
    }
    historyCard.hidden = list.items.length === 0;
    if (!chosen) return;
    const h = await api('GET', `/api/v1/rate-budgets/${chosen}/history?hours=${HISTORY_HOURS}`);
    const htext = JSON.stringify({ ...h, since: null, until: null });
    if (htext === lastHistory) return;
    lastHistory = htext;
    drawHistory(chart, samples, h);
  }
  return { name: 'budgets', title: 'Budgets', el: view, refresh };
}
