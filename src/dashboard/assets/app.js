/**
 * The syncrelay dashboard: hash-routed pages over the HTTP API (/api/v1), no build step.
 * The API token lives in sessionStorage and goes in the Authorization header of every call;
 * pages refresh themselves every few seconds. Text from the server is only ever set as text.
 * The status lists come from the server (src/domain/statuses.ts, served as statuses.js).
 */

import {
  JOB_RUN_STATUSES,
  SYNC_MODES,
  TERMINAL_RUN_STATUSES,
  TERMINAL_UNIT_STATUSES,
  TRIGGERS,
  UNIT_STATUSES,
} from './statuses.js';
import { activityView } from './activity.js';
import { budgetsView } from './budgets.js';
import { dataView } from './data.js';

const TOKEN_KEY = 'syncrelay.token';
const REFRESH_MS = 3000;
const HISTORY_PAGE = 25;
const UNITS_PAGE = 100;
const DELIVERIES_PAGE = 25;
const INTEGRATIONS_TTL_MS = 30_000;

const TERMINAL_RUN = new Set(TERMINAL_RUN_STATUSES);
const TERMINAL_UNIT = new Set(TERMINAL_UNIT_STATUSES);
/** The modes the sync form offers: a backfill has its own form (a verify a provider cannot do answers 400). */
const SYNC_FORM_MODES = SYNC_MODES.filter((m) => m !== 'backfill');

const state = {
  token: null,
  /** { org_id, scopes, token_id } of the token */
  session: null,
  /** id → integration */
  integrations: new Map(),
  integrationsAt: 0,
  /** the page on screen: { name, el, refresh? } */
  view: null,
  refreshing: false,
  /** a refresh was asked for while one ran */
  again: false,
};

const $ = (id) => document.getElementById(id);

// ---------------------------------------------------------------- DOM helpers

/** Creates an element; `on*` attributes become listeners, children are nodes or text. */
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'class') el.className = value;
    else if (key.startsWith('on')) el.addEventListener(key.slice(2), value);
    else if (key === 'value') el.value = value;
    else el.setAttribute(key, value === true ? '' : String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
}

function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

function field(label, control, hint) {
  return h(
    'div',
    { class: 'field' },
    h('label', { for: control.id }, label),
    control,
    hint ? h('p', { class: 'hint' }, hint) : null,
  );
}

function select(id, options, selected) {
  return h(
    'select',
    { id, name: id },
    options.map(([value, text]) => h('option', { value, selected: value === selected }, text)),
  );
}

/** A table with a caption, column headers (`opts.numeric` ones right-aligned) and a body the caller fills. */
function table(caption, headers, opts = {}) {
  const body = h('tbody');
  const el = h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      { class: opts.class ?? null },
      h('caption', { class: opts.showCaption ? null : 'visually-hidden' }, caption),
      h(
        'thead',
        null,
        h(
          'tr',
          null,
          headers.map((t) => h('th', { scope: 'col', class: opts.numeric?.includes(t) ? 'num' : null }, t)),
        ),
      ),
      body,
    ),
  );
  return { el, body, columns: headers.length };
}

function emptyRow(columns, text) {
  return h('tr', { class: 'empty' }, h('td', { colspan: columns }, text));
}

// ---------------------------------------------------------------- formatting

function pad(n) {
  return String(n).padStart(2, '0');
}

function localTime(d) {
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** A <time> in local time, the ISO form in its title. */
function time(iso) {
  if (!iso) return h('span', { class: 'muted' }, '—');
  return h('time', { datetime: iso, title: iso }, localTime(new Date(iso)));
}

/** A <time> showing the local time of day only. */
function clock(iso) {
  return h('time', { datetime: iso, title: iso, class: 'small' }, localTime(new Date(iso)).slice(11));
}

function duration(ms) {
  if (ms === null || ms === undefined) return '—';
  if (ms < 1000) return `${ms} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
  return `${Math.floor(s / 3600)} h ${Math.round((s % 3600) / 60)} min`;
}

function ago(iso) {
  if (!iso) return '—';
  return `${duration(Math.max(0, Date.now() - new Date(iso).getTime()))} ago`;
}

/** A UTC bound: the date alone at midnight, else date and time. */
function utcBound(iso) {
  const text = new Date(iso).toISOString();
  return text.endsWith('T00:00:00.000Z') ? text.slice(0, 10) : `${text.slice(0, 16).replace('T', ' ')}Z`;
}

function windowText(since, before) {
  if (!since && !before) return h('span', { class: 'muted' }, 'whole dataset');
  return `${since ? utcBound(since) : '…'} → ${before ? utcBound(before) : '…'}`;
}

function shortId(id) {
  return id ? id.slice(0, 8) : '—';
}

function dash(value) {
  return value === null || value === undefined || value === '' ? h('span', { class: 'muted' }, '—') : String(value);
}

function badge(status) {
  if (!status) return h('span', { class: 'muted' }, '—');
  return h('span', { class: `badge badge-${status}` }, status.replace(/_/g, ' '));
}

function runLink(id) {
  return h('a', { href: `#/runs/${id}`, class: 'mono', 'aria-label': `Open run ${id}` }, shortId(id));
}

function integrationName(id) {
  return state.integrations.get(id)?.name ?? shortId(id);
}

function can(scope) {
  const scopes = state.session?.scopes ?? [];
  return scopes.includes('admin') || scopes.includes(scope);
}

/** A progress bar with its numbers beside it. */
function progress(done, total, label) {
  const pct = total > 0 ? Math.floor((done * 100) / total) : 0;
  return h(
    'div',
    { class: 'progress' },
    h('progress', { max: Math.max(total, 1), value: total > 0 ? done : 0, 'aria-label': label }),
    h('span', { class: 'progress-text' }, `${done} / ${total}`, h('span', { class: 'muted' }, ` (${pct}%)`)),
  );
}

// ---------------------------------------------------------------- API calls

class ApiFailure extends Error {
  constructor(status, code, message, details) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details ?? {};
  }
}

function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== null && v !== undefined && v !== '') q.set(k, String(v));
  const text = q.toString();
  return text ? `?${text}` : '';
}

/** One call with the token; a failure throws ApiFailure with the API's error code and message. */
async function api(method, path, body) {
  const headers = { accept: 'application/json', authorization: `Bearer ${state.token}` };
  const init = { method, headers, cache: 'no-store' };
  if (body !== undefined) {
    headers['content-type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(path, init);
  } catch {
    throw new ApiFailure(0, 'network_error', 'the server cannot be reached', {});
  }
  const text = await res.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (res.ok) return data;
  const e = data?.error ?? {};
  const failure = new ApiFailure(res.status, e.code ?? `http_${res.status}`, e.message ?? res.statusText, e.details);
  if (res.status === 401 && state.token) signOut(`Signed out: ${failure.message}.`);
  throw failure;
}

async function loadIntegrations(force = false) {
  if (!force && Date.now() - state.integrationsAt < INTEGRATIONS_TTL_MS) return;
  const { items } = await api('GET', '/api/v1/integrations');
  state.integrations = new Map(items.map((i) => [i.id, i]));
  state.integrationsAt = Date.now();
}

// ---------------------------------------------------------------- messages

function showNotice(...content) {
  const el = $('notice');
  fill(
    el,
    h('span', null, content),
    h('button', { type: 'button', class: 'quiet small', onclick: () => (el.hidden = true) }, 'Dismiss'),
  );
  el.hidden = false;
}

function showError(err, fromRefresh = false) {
  const el = $('error');
  if (fromRefresh) el.dataset.fromRefresh = '1';
  else delete el.dataset.fromRefresh;
  const status = err instanceof ApiFailure && err.status ? ` (HTTP ${err.status}, ${err.code})` : '';
  const existing = err?.details?.existing_run_id;
  fill(
    el,
    h('strong', null, 'Error: '),
    `${err?.message ?? String(err)}${status}`,
    existing ? [' — ', h('a', { href: `#/runs/${existing}` }, 'open the unfinished run')] : null,
  );
  el.hidden = false;
}

function clearError() {
  $('error').hidden = true;
}

// ---------------------------------------------------------------- history

function historyView(params) {
  const filters = {
    status: params.get('status') ?? '',
    integration_id: params.get('integration_id') ?? '',
    triggered_by: params.get('triggered_by') ?? '',
  };
  const cursors = [null];
  let next = null;

  const form = h(
    'form',
    { class: 'filters', 'aria-label': 'Filter job runs', onsubmit: (e) => e.preventDefault() },
    field('Status', select('f-status', [['', 'Any status'], ...JOB_RUN_STATUSES.map((s) => [s, s])], filters.status)),
    field(
      'Integration',
      select(
        'f-integration',
        [['', 'Any integration'], ...[...state.integrations.values()].map((i) => [i.id, i.name])],
        filters.integration_id,
      ),
    ),
    field('Trigger', select('f-trigger', [['', 'Any trigger'], ...TRIGGERS.map((t) => [t, t])], filters.triggered_by)),
  );
  form.addEventListener('change', () => {
    const chosen = {
      status: $('f-status').value,
      integration_id: $('f-integration').value,
      triggered_by: $('f-trigger').value,
    };
    location.hash = `#/runs${query(chosen)}`;
  });

  const list = table('Job runs, newest first', [
    'Created',
    'Integration',
    'Trigger',
    'Mode',
    'Status',
    'Units done',
    'Duration',
    'Run',
  ]);
  list.body.id = 'history-rows';
  const pageLabel = h('span', { class: 'muted' });
  const newer = h('button', { type: 'button', onclick: () => (cursors.pop(), refreshNow()) }, '← Newer');
  const older = h('button', { type: 'button', onclick: () => (cursors.push(next), refreshNow()) }, 'Older →');

  const el = h(
    'section',
    { 'aria-labelledby': 'page-title' },
    h('div', { class: 'page-head' }, h('h1', { id: 'page-title', tabindex: '-1' }, 'Job run history')),
    h(
      'div',
      { class: 'card' },
      form,
      list.el,
      h('nav', { class: 'pager', 'aria-label': 'Job run pages' }, newer, pageLabel, older),
    ),
  );

  async function refresh() {
    await loadIntegrations();
    const page = await api(
      'GET',
      `/api/v1/job-runs${query({ ...filters, cursor: cursors.at(-1), limit: HISTORY_PAGE })}`,
    );
    next = page.next_cursor;
    fill(
      list.body,
      page.items.length ? page.items.map(historyRow) : emptyRow(list.columns, 'No job runs match these filters.'),
    );
    newer.disabled = cursors.length === 1;
    older.disabled = !next;
    pageLabel.textContent = `Page ${cursors.length}`;
  }
  return { name: 'runs', title: 'History', el, refresh };
}

/** The run's counters are written when it finishes: until then the run page has the live numbers. */
function unitsDone(j, done) {
  if (j.total_units === null) return dash(null);
  if (j.total_units === 0 && !TERMINAL_RUN.has(j.run_status)) return h('span', { class: 'muted' }, 'in progress');
  return progress(done, j.total_units, `Units done of run ${shortId(j.sync_run_id)}`);
}

function historyRow(j) {
  const done = (j.completed_units ?? 0) + (j.failed_units ?? 0);
  const runNote =
    j.run_status && j.run_status !== j.status
      ? h('span', { class: 'muted small' }, ` run: ${j.run_status.replace(/_/g, ' ')}`)
      : null;
  return h(
    'tr',
    { 'data-job-run': j.id, 'data-sync-run': j.sync_run_id ?? '' },
    h('td', null, time(j.created_at)),
    h('td', null, integrationName(j.integration_id)),
    h('td', null, j.triggered_by),
    h('td', null, dash(j.mode)),
    h('td', { class: 'status' }, badge(j.status), runNote),
    h('td', null, unitsDone(j, done)),
    h('td', null, duration(j.duration_ms)),
    h('td', null, j.sync_run_id ? runLink(j.sync_run_id) : dash(null)),
  );
}

// ---------------------------------------------------------------- run page

function runView(id) {
  let unitStatus = '';
  const cursors = [null];
  let next = null;
  let run = null;

  const statusSlot = h('span', { id: 'run-status' });
  const cancel = h(
    'button',
    { type: 'button', class: 'danger', id: 'cancel-run', onclick: () => cancelRun() },
    'Cancel run',
  );
  if (!can('trigger')) {
    cancel.disabled = true;
    cancel.title = 'Cancelling needs a token with the trigger scope';
  }
  const summary = h('dl', { class: 'facts', id: 'run-facts' });
  const jobFacts = h('dl', { class: 'facts', id: 'job-facts' });
  const progressSlot = h('div', { id: 'run-progress' });
  const counts = h('ul', { class: 'chips', id: 'unit-counts', 'aria-label': 'Units by status' });
  const units = table(
    'Units of this run',
    [
      'Status',
      'Source',
      'Dataset',
      'Window (UTC)',
      'Attempts',
      'Lease',
      'Retry reason',
      'Error (category: message)',
      'Duration',
    ],
    { class: 'units', numeric: ['Attempts', 'Duration'] },
  );
  units.body.id = 'unit-rows';
  const statusFilter = select('u-status', [['', 'Any status'], ...UNIT_STATUSES.map((s) => [s, s])], '');
  statusFilter.addEventListener('change', () => {
    unitStatus = statusFilter.value;
    cursors.splice(1);
    void refreshNow();
  });
  const pageLabel = h('span', { class: 'muted' });
  const prev = h('button', { type: 'button', onclick: () => (cursors.pop(), refreshNow()) }, '← Previous');
  const more = h('button', { type: 'button', onclick: () => (cursors.push(next), refreshNow()) }, 'Next →');

  const el = h(
    'section',
    { 'aria-labelledby': 'page-title' },
    h('p', { class: 'crumbs' }, h('a', { href: '#/runs' }, '← History')),
    h(
      'div',
      { class: 'page-head' },
      h('h1', { id: 'page-title', tabindex: '-1' }, 'Run ', h('span', { class: 'mono' }, shortId(id)), ' ', statusSlot),
      h('div', { class: 'actions' }, cancel),
    ),
    h(
      'div',
      { class: 'grid two' },
      h('section', { class: 'card', 'aria-labelledby': 'run-h' }, h('h2', { id: 'run-h' }, 'Sync run'), summary),
      h('section', { class: 'card', 'aria-labelledby': 'job-h' }, h('h2', { id: 'job-h' }, 'Job run'), jobFacts),
    ),
    h(
      'section',
      { class: 'card', 'aria-labelledby': 'progress-h' },
      h('h2', { id: 'progress-h' }, 'Progress'),
      progressSlot,
      counts,
    ),
    h(
      'section',
      { class: 'card', 'aria-labelledby': 'units-h' },
      h(
        'div',
        { class: 'card-head' },
        h('h2', { id: 'units-h' }, 'Units'),
        h('div', { class: 'filters inline' }, field('Unit status', statusFilter)),
      ),
      units.el,
      h('nav', { class: 'pager', 'aria-label': 'Unit pages' }, prev, pageLabel, more),
    ),
  );

  async function cancelRun() {
    if (!confirm(`Cancel run ${shortId(id)}? Its unfinished units are cancelled.`)) return;
    cancel.disabled = true;
    try {
      const r = await api('POST', `/api/v1/sync-runs/${id}/cancel`);
      showNotice(
        r.outcome === 'cancelled' ? `Run ${shortId(id)} cancelled.` : `Run ${shortId(id)} had already finished.`,
      );
      await refreshNow();
    } catch (err) {
      showError(err);
      cancel.disabled = false;
    }
  }

  async function refresh() {
    await loadIntegrations();
    const [detail, page] = await Promise.all([
      api('GET', `/api/v1/sync-runs/${id}`),
      api(
        'GET',
        `/api/v1/sync-runs/${id}/units${query({ status: unitStatus, cursor: cursors.at(-1), limit: UNITS_PAGE })}`,
      ),
    ]);
    run = detail.run;
    fill(statusSlot, badge(run.status));
    if (can('trigger')) cancel.disabled = TERMINAL_RUN.has(run.status);
    renderRunFacts(summary, run, detail.unit_counts, detail.verify_counts);
    renderJobFacts(jobFacts, detail.job_run);
    // The run's own counters are written when it finishes; the unit counts are live.
    const total = Math.max(run.total_units, sum(Object.values(detail.unit_counts)));
    const done = sum(Object.entries(detail.unit_counts).map(([s, c]) => (TERMINAL_UNIT.has(s) ? c : 0)));
    fill(
      progressSlot,
      progress(done, total, 'Units done'),
      h('p', { class: 'muted small' }, `${done} of ${total} units finished`),
    );
    fill(
      counts,
      UNIT_STATUSES.filter((s) => detail.unit_counts[s]).map((s) =>
        h('li', { 'data-status': s }, badge(s), h('span', { class: 'count' }, String(detail.unit_counts[s]))),
      ),
    );
    next = page.next_cursor;
    fill(
      units.body,
      page.items.length ? [...page.items].sort(unitOrder).map(unitRow) : emptyRow(units.columns, 'No units match.'),
    );
    prev.disabled = cursors.length === 1;
    more.disabled = !next;
    pageLabel.textContent = `Page ${cursors.length}`;
  }
  return { name: 'runs', title: `Run ${shortId(id)}`, el, refresh };
}

function facts(dl, pairs) {
  fill(
    dl,
    pairs.map(([k, v]) => [h('dt', null, k), h('dd', null, v)]),
  );
}

function sum(numbers) {
  return numbers.reduce((a, b) => a + b, 0);
}

/** A verify run's counts, in the order the API gives them. */
const VERIFY_COUNT_NAMES = ['checked', 'missing', 'stale', 'restored', 'deleted'];

function renderRunFacts(dl, run, counts, verify) {
  const total = sum(Object.values(counts));
  const verified = verify ? [['Verify', VERIFY_COUNT_NAMES.map((k) => `${verify[k]} ${k}`).join(' · ')]] : [];
  facts(dl, [
    ['Id', h('span', { class: 'mono' }, run.id)],
    ['Integration', integrationName(run.integration_id)],
    ['Mode', run.mode],
    ['Triggered by', run.triggered_by],
    ['Status', badge(run.status)],
    ['Created', time(run.created_at)],
    ['Started', time(run.started_at)],
    ['Completed', time(run.completed_at)],
    ['Units', `${counts.success ?? 0} succeeded · ${counts.failed ?? 0} failed · ${total} total`],
    ...verified,
    ['Error', run.error ? h('span', { class: 'error-text' }, run.error) : dash(null)],
  ]);
}

function renderJobFacts(dl, job) {
  if (!job) return fill(dl, h('p', { class: 'muted' }, 'No JobRun is linked to this run.'));
  facts(dl, [
    ['Id', h('span', { class: 'mono' }, job.id)],
    ['Status', badge(job.status)],
    ['Triggered by', job.triggered_by],
    ['Created', time(job.created_at)],
    ['Started', time(job.started_at)],
    ['Completed', time(job.completed_at)],
    ['Duration', duration(job.duration_ms)],
    ['Error', job.error ? h('span', { class: 'error-text' }, job.error) : dash(null)],
  ]);
}

/** Reference units first, then by window, source and dataset (within the page on screen). */
function unitOrder(a, b) {
  const key = (u) => [u.since_at ?? '', u.source_key ?? '', u.dataset_key].join('\u0000');
  return key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0;
}

function leaseCell(u) {
  if (!u.lease_owner) return dash(null);
  const owner = h(
    'span',
    { class: 'mono small', title: u.lease_owner },
    u.lease_owner.length > 14 ? `${u.lease_owner.slice(0, 8)}…` : u.lease_owner,
  );
  if (!u.lease_expires_at) return owner;
  const live = new Date(u.lease_expires_at).getTime() > Date.now();
  return h(
    'span',
    null,
    owner,
    h('span', { class: 'muted small' }, live ? ' until ' : ' expired '),
    clock(u.lease_expires_at),
  );
}

function errorCell(u) {
  if (!u.error && !u.error_category) return dash(null);
  return [
    u.error_category ? h('span', { class: 'error-category' }, u.error_category) : null,
    u.error ? h('span', { class: 'error-text', title: u.error }, u.error) : null,
  ];
}

function unitRow(u) {
  const lease = leaseCell(u);
  return h(
    'tr',
    { 'data-unit': u.id, 'data-status': u.status },
    h('td', { class: 'status' }, badge(u.status)),
    h('td', null, dash(u.source_key)),
    h('td', { class: 'nowrap' }, u.dataset_key),
    h('td', { class: 'nowrap' }, windowText(u.since_at, u.before_at)),
    h('td', { class: 'num' }, String(u.attempts)),
    h('td', { class: 'nowrap' }, lease),
    h('td', null, dash(u.last_retry_reason)),
    h('td', { class: 'error-cell' }, errorCell(u)),
    h('td', { class: 'num' }, duration(u.duration_ms)),
  );
}

// ---------------------------------------------------------------- integrations and triggers

function isoDate(d) {
  return d.toISOString().slice(0, 10);
}

function integrationsView() {
  const list = h('div', { class: 'stack', id: 'integration-list' });
  const el = h(
    'section',
    { 'aria-labelledby': 'page-title' },
    h('div', { class: 'page-head' }, h('h1', { id: 'page-title', tabindex: '-1' }, 'Integrations')),
    can('trigger')
      ? null
      : h('p', { class: 'callout' }, 'This token lacks the trigger scope: it can look, not start or cancel runs.'),
    list,
  );
  let shown = '';
  async function refresh() {
    await loadIntegrations(true);
    const ids = [...state.integrations.keys()].join(',');
    if (ids === shown) return; // keep forms the user is filling in
    shown = ids;
    const items = [...state.integrations.values()];
    fill(list, items.length ? items.map(integrationCard) : h('p', { class: 'card muted' }, 'No integrations yet.'));
  }
  return { name: 'integrations', title: 'Integrations', el, refresh };
}

function integrationCard(i) {
  const key = i.id.slice(0, 8);
  return h(
    'article',
    { class: 'card integration', 'aria-labelledby': `int-${key}`, 'data-integration': i.id },
    h(
      'div',
      { class: 'card-head' },
      h('h2', { id: `int-${key}` }, i.name),
      h(
        'span',
        { class: `badge ${i.enabled ? 'badge-success' : 'badge-cancelled'}` },
        i.enabled ? 'enabled' : 'disabled',
      ),
    ),
    h(
      'dl',
      { class: 'facts compact' },
      h('dt', null, 'Provider'),
      h('dd', null, i.provider),
      h('dt', null, 'Id'),
      h('dd', { class: 'mono' }, i.id),
      h('dt', null, 'Sources'),
      h('dd', null, i.sources.join(', ') || '—'),
      h('dt', null, 'Datasets'),
      h('dd', null, i.datasets.join(', ') || '—'),
    ),
    h(
      'p',
      { class: 'links' },
      h('a', { href: `#/runs${query({ integration_id: i.id })}` }, 'Runs of this integration →'),
      ' ',
      h('a', { href: `#/integrations/${i.id}/webhooks` }, 'Webhook deliveries →'),
      ' ',
      h('a', { href: `#/freshness/${i.id}` }, 'Freshness →'),
    ),
    h('div', { class: 'grid two' }, syncForm(i, key), backfillForm(i, key)),
  );
}

function checkbox(id, label, checked, value) {
  return h(
    'label',
    { class: 'check', for: id },
    h('input', { type: 'checkbox', id, value: value ?? 'on', checked }),
    ` ${label}`,
  );
}

function syncForm(i, key) {
  const mode = select(
    `sync-mode-${key}`,
    SYNC_FORM_MODES.map((m) => [m, m.replace(/_/g, ' ')]),
    SYNC_FORM_MODES[0],
  );
  const force = checkbox(`sync-force-${key}`, 'Force (even if a run of this mode is unfinished)', false);
  const submit = h('button', { type: 'submit', class: 'primary', disabled: !can('trigger') }, 'Start sync');
  return h(
    'form',
    {
      class: 'trigger',
      'aria-label': `Start a sync of ${i.name}`,
      onsubmit: (e) => {
        e.preventDefault();
        const body = { mode: mode.value };
        if (force.querySelector('input').checked) body.force = true;
        void trigger(submit, `/api/v1/integrations/${i.id}/sync`, body, 'Sync');
      },
    },
    h(
      'fieldset',
      { disabled: !can('trigger') },
      h('legend', null, 'Sync'),
      field('Mode', mode),
      force,
      h('div', { class: 'actions' }, submit),
    ),
  );
}

function backfillForm(i, key) {
  const now = new Date();
  const today = isoDate(now);
  const monthAgo = isoDate(new Date(now.getTime() - 30 * 86_400_000));
  const since = h('input', { type: 'date', id: `bf-since-${key}`, required: true, value: monthAgo });
  const before = h('input', { type: 'date', id: `bf-before-${key}`, required: true, value: today });
  const datasets = i.datasets.map((d, n) => checkbox(`bf-ds-${key}-${n}`, d, true, d));
  const force = checkbox(`bf-force-${key}`, 'Force (even if a backfill is unfinished)', false);
  const submit = h('button', { type: 'submit', class: 'primary', disabled: !can('trigger') }, 'Start backfill');
  return h(
    'form',
    {
      class: 'trigger',
      'aria-label': `Start a backfill of ${i.name}`,
      onsubmit: (e) => {
        e.preventDefault();
        const chosen = datasets
          .map((l) => l.querySelector('input'))
          .filter((c) => c.checked)
          .map((c) => c.value);
        const body = { since: `${since.value}T00:00:00Z`, before: `${before.value}T00:00:00Z` };
        if (chosen.length !== i.datasets.length) body.datasets = chosen;
        if (force.querySelector('input').checked) body.force = true;
        void trigger(submit, `/api/v1/integrations/${i.id}/backfill`, body, 'Backfill');
      },
    },
    h(
      'fieldset',
      { disabled: !can('trigger') },
      h('legend', null, 'Backfill'),
      h('div', { class: 'row' }, field('Since (UTC, inclusive)', since), field('Before (UTC, exclusive)', before)),
      h('fieldset', { class: 'datasets' }, h('legend', null, 'Datasets'), datasets),
      force,
      h('div', { class: 'actions' }, submit),
    ),
  );
}

async function trigger(button, path, body, what) {
  button.disabled = true;
  clearError();
  try {
    const r = await api('POST', path, body);
    showNotice(
      `${what} accepted: `,
      h('a', { href: `#/runs/${r.sync_run_id}`, id: 'accepted-run' }, `run ${shortId(r.sync_run_id)}`),
      ' is planned.',
    );
  } catch (err) {
    showError(err);
  } finally {
    button.disabled = false;
  }
}

// ---------------------------------------------------------------- webhook deliveries

/** `a 3 · b 0` from a counts object, in the order the API gives its keys. */
function countChips(id, label, counts) {
  return h(
    'ul',
    { class: 'chips', id, 'aria-label': label },
    Object.entries(counts).map(([k, n]) =>
      h('li', { 'data-key': k }, badge(k), h('span', { class: 'count' }, String(n))),
    ),
  );
}

/** An integration's webhook deliveries: the last 24 h summed up (counts, delivery-to-data times), then a page. */
function deliveriesView(id) {
  let status = '';
  const cursors = [null];
  let next = null;
  let statusKeys = '';

  const total = statCard('Deliveries (24 h)', 'stat-deliveries');
  const runs = statCard('Runs armed', 'stat-runs-armed');
  const p50 = statCard('Delivery → data p50', 'stat-p50');
  const p95 = statCard('Delivery → data p95', 'stat-p95');
  const timing = h('p', { class: 'muted small', id: 'delivery-timing' });
  const statuses = h('div', { id: 'delivery-statuses' });
  const outcomes = h('div', { id: 'delivery-outcomes' });
  const title = h('span', { id: 'deliveries-integration' }, shortId(id));
  const statusFilter = select('d-status', [['', 'Any status']], '');
  statusFilter.addEventListener('change', () => {
    status = statusFilter.value;
    cursors.splice(1);
    void refreshNow();
  });
  const list = table('Webhook deliveries, newest first', [
    'Received',
    'Status',
    'Outcome',
    'Event',
    'Source',
    'Delivery id',
    'Run',
  ]);
  list.body.id = 'delivery-rows';
  const pageLabel = h('span', { class: 'muted' });
  const newer = h('button', { type: 'button', onclick: () => (cursors.pop(), refreshNow()) }, '← Newer');
  const older = h('button', { type: 'button', onclick: () => (cursors.push(next), refreshNow()) }, 'Older →');

  const el = h(
    'section',
    { 'aria-labelledby': 'page-title' },
    h('p', { class: 'crumbs' }, h('a', { href: '#/integrations' }, '← Integrations')),
    h('div', { class: 'page-head' }, h('h1', { id: 'page-title', tabindex: '-1' }, 'Webhook deliveries of ', title)),
    h('div', { class: 'grid four' }, total.el, runs.el, p50.el, p95.el),
    h(
      'section',
      { class: 'card', 'aria-labelledby': 'delivery-counts-h' },
      h('h2', { id: 'delivery-counts-h' }, 'Last 24 hours'),
      timing,
      h('h3', null, 'By status'),
      statuses,
      h('h3', null, 'Received, by outcome'),
      outcomes,
    ),
    h(
      'section',
      { class: 'card', 'aria-labelledby': 'deliveries-h' },
      h(
        'div',
        { class: 'card-head' },
        h('h2', { id: 'deliveries-h' }, 'Deliveries'),
        h('div', { class: 'filters inline' }, field('Delivery status', statusFilter)),
      ),
      list.el,
      h('nav', { class: 'pager', 'aria-label': 'Delivery pages' }, newer, pageLabel, older),
    ),
  );

  /** The filter offers the statuses the summary counts (the server's list, never spelled here). */
  function offerStatuses(keys) {
    if (keys.join(',') === statusKeys) return;
    statusKeys = keys.join(',');
    fill(
      statusFilter,
      [['', 'Any status'], ...keys.map((k) => [k, k])].map(([value, text]) =>
        h('option', { value, selected: value === status }, text),
      ),
    );
  }

  async function refresh() {
    await loadIntegrations();
    const base = `/api/v1/integrations/${id}/webhook-deliveries`;
    const [summary, page] = await Promise.all([
      api('GET', `${base}/summary`),
      api('GET', `${base}${query({ status, cursor: cursors.at(-1), limit: DELIVERIES_PAGE })}`),
    ]);
    title.textContent = integrationName(id);
    total.value.textContent = String(sum(Object.values(summary.statuses)));
    runs.value.textContent = String(summary.runs_armed);
    const t = summary.delivery_to_data;
    p50.value.textContent = t.samples ? duration(t.p50_ms) : '—';
    p95.value.textContent = t.samples ? duration(t.p95_ms) : '—';
    timing.textContent = t.samples
      ? `Delivery → data over ${t.samples} deliveries whose run succeeded: p50 ${duration(t.p50_ms)}, ` +
        `p95 ${duration(t.p95_ms)}, max ${duration(t.max_ms)}.`
      : 'No delivery of the last 24 hours has a successful run yet.';
    fill(statuses, countChips('delivery-status-counts', 'Deliveries by status', summary.statuses));
    fill(outcomes, countChips('delivery-outcome-counts', 'Received deliveries by outcome', summary.outcomes));
    offerStatuses(Object.keys(summary.statuses));
    next = page.next_cursor;
    fill(list.body, page.items.length ? page.items.map(deliveryRow) : emptyRow(list.columns, 'No deliveries match.'));
    newer.disabled = cursors.length === 1;
    older.disabled = !next;
    pageLabel.textContent = `Page ${cursors.length}`;
  }
  return { name: 'integrations', title: 'Webhook deliveries', el, refresh };
}

function deliveryRow(d) {
  const event = d.event ? `${d.event}${d.action ? `.${d.action}` : ''}` : null;
  return h(
    'tr',
    { 'data-delivery': d.id, 'data-status': d.status },
    h('td', null, time(d.received_at)),
    h('td', { class: 'status' }, badge(d.status)),
    h('td', null, badge(d.outcome)),
    h('td', { class: 'nowrap' }, dash(event)),
    h('td', null, dash(d.source)),
    h('td', { class: 'mono small' }, dash(d.delivery_id)),
    h('td', null, d.sync_run_id ? runLink(d.sync_run_id) : dash(null)),
  );
}

// ---------------------------------------------------------------- freshness

/** A state as words; a row that is not fresh shows it in capitals (never colour alone). */
function freshnessState(state) {
  const words = state.replace(/_/g, ' ');
  return h('span', { class: `fstate fstate-${state}` }, state === 'fresh' ? words : words.toUpperCase());
}

/** What else a row's state says: the error and its run, the deferral's end, the catch-up estimate. */
function freshnessDetail(i) {
  if (i.last_error_category) {
    return h(
      'span',
      null,
      h('span', { class: 'error-category' }, i.last_error_category),
      i.last_error_run_id ? runLink(i.last_error_run_id) : null,
    );
  }
  if (i.deferred_until) return h('span', null, 'rate limit until ', time(i.deferred_until));
  if (i.catch_up_eta) return h('span', null, 'caught up ~', time(i.catch_up_eta));
  if (i.in_progress_run_id) return h('span', null, 'run ', runLink(i.in_progress_run_id), ' under way');
  return dash(null);
}

function freshnessRow(i) {
  return h(
    'tr',
    {
      class: `freshness-row${i.state === 'fresh' ? '' : ' attention'}`,
      'data-source': i.source_key,
      'data-dataset': i.dataset_key,
      'data-state': i.state,
    },
    h('td', null, i.source_name === i.source_key ? i.source_key : `${i.source_name} (${i.source_key})`),
    h('td', null, i.dataset_key),
    h('td', { class: 'state' }, freshnessState(i.state)),
    h('td', { class: 'num', 'data-field': 'lag' }, i.lag_ms === null ? dash(null) : duration(i.lag_ms)),
    h('td', { 'data-field': 'watermark' }, time(i.watermark_at)),
    h('td', { 'data-field': 'last-success' }, time(i.last_success_at)),
    h('td', { 'data-field': 'detail' }, freshnessDetail(i)),
  );
}

/** Where a freshness answer's allowed lag comes from, in words. */
const LAG_BASIS = { schedule: 'twice the tightest schedule interval', setting: 'the server setting' };

/** How fresh each source × dataset of an integration is, worst first (GET …/integrations/:id/freshness). */
function freshnessView(id) {
  const title = h('span', { id: 'freshness-integration' }, id ? shortId(id) : '—');
  const picker = select(
    'f-integration',
    [...state.integrations.values()].map((i) => [i.id, i.name]),
    id,
  );
  picker.addEventListener('change', () => location.assign(`#/freshness/${picker.value}`));
  const rule = h('p', { class: 'muted small', id: 'freshness-rule' });
  const counts = h('div', { id: 'freshness-counts-box' });
  const schedules = h('p', { class: 'small', id: 'freshness-schedules' });
  const list = table('Sources by dataset, worst first', [
    'Source',
    'Dataset',
    'State',
    'Lag',
    'Watermark',
    'Last success',
    'Detail',
  ]);
  list.body.id = 'freshness-rows';
  const el = h(
    'section',
    { 'aria-labelledby': 'page-title' },
    h(
      'div',
      { class: 'page-head' },
      h('h1', { id: 'page-title', tabindex: '-1' }, 'Freshness of ', title),
      id ? field('Integration', picker) : null,
    ),
    h(
      'section',
      { class: 'card', 'aria-labelledby': 'freshness-h' },
      h('h2', { id: 'freshness-h' }, 'States'),
      rule,
      counts,
      schedules,
    ),
    h('section', { class: 'card', 'aria-label': 'Sources' }, list.el),
  );

  async function refresh() {
    if (!id) {
      fill(list.body, emptyRow(list.columns, 'No integrations yet.'));
      return;
    }
    const r = await api('GET', `/api/v1/integrations/${id}/freshness`);
    title.textContent = r.name;
    const basis = LAG_BASIS[r.max_lag_basis] ?? 'the server setting';
    rule.textContent = `Fresh while the lag is within ${duration(r.max_lag_ms)} (${basis}). As of ${localTime(new Date(r.as_of))}.`;
    fill(counts, countChips('freshness-counts', 'Rows by state', r.counts));
    schedules.textContent = r.schedules.length
      ? `Schedules: ${r.schedules.map((s) => `${s.cron} ${s.timezone} ${s.mode}${s.enabled ? '' : ' (disabled)'}`).join('; ')}`
      : 'No schedule: runs start by hand, by the API or by webhooks.';
    fill(list.body, r.items.length ? r.items.map(freshnessRow) : emptyRow(list.columns, 'No enabled source.'));
  }
  return { name: 'freshness', title: 'Freshness', el, refresh };
}

// ---------------------------------------------------------------- outbox

function statCard(label, id) {
  const value = h('p', { class: 'stat-value', id });
  return { el: h('div', { class: 'card stat' }, h('p', { class: 'stat-label' }, label), value), value };
}

function outboxView() {
  const claims = statCard('Live claims', 'stat-claims');
  const due = statCard('Due now', 'stat-due');
  const oldest = statCard('Oldest pending age', 'stat-oldest');
  const pivot = h('div', { id: 'outbox-counts' });
  const errors = table('Recent outbox errors', ['Updated', 'Kind', 'Status', 'Attempts', 'Run', 'Error'], {
    numeric: ['Attempts'],
  });
  errors.body.id = 'outbox-errors';
  const el = h(
    'section',
    { 'aria-labelledby': 'page-title' },
    h('div', { class: 'page-head' }, h('h1', { id: 'page-title', tabindex: '-1' }, 'Outbox health')),
    h('div', { class: 'grid three' }, claims.el, due.el, oldest.el),
    h(
      'section',
      { class: 'card', 'aria-labelledby': 'counts-h' },
      h('h2', { id: 'counts-h' }, 'Rows by kind and status'),
      pivot,
    ),
    h(
      'section',
      { class: 'card', 'aria-labelledby': 'errors-h' },
      h('h2', { id: 'errors-h' }, 'Recent errors'),
      errors.el,
    ),
  );
  async function refresh() {
    const s = await api('GET', '/api/v1/outbox/stats');
    claims.value.textContent = String(s.live_claims);
    due.value.textContent = String(s.due);
    oldest.value.textContent =
      s.oldest_pending_age_seconds === null ? 'none due' : duration(Math.round(s.oldest_pending_age_seconds * 1000));
    fill(pivot, countsTable(s.counts));
    fill(
      errors.body,
      s.recent_errors.length
        ? s.recent_errors.map((e) =>
            h(
              'tr',
              null,
              h('td', null, time(e.updated_at)),
              h('td', null, e.kind),
              h('td', null, badge(e.status)),
              h('td', { class: 'num' }, String(e.attempts)),
              h('td', null, runLink(e.sync_run_id)),
              h('td', { class: 'error-cell' }, h('span', { class: 'error-text', title: e.last_error }, e.last_error)),
            ),
          )
        : emptyRow(errors.columns, 'No recent errors.'),
    );
  }
  return { name: 'outbox', title: 'Outbox', el, refresh };
}

/** kind × status counts as a table with totals. */
function countsTable(counts) {
  if (counts.length === 0) return h('p', { class: 'muted' }, 'The outbox is empty.');
  const kinds = [...new Set(counts.map((c) => c.kind))].sort();
  const statuses = [...new Set(counts.map((c) => c.status))].sort();
  const at = (k, s) => counts.find((c) => c.kind === k && c.status === s)?.count ?? 0;
  const t = table('Outbox rows by kind and status', ['Kind', ...statuses, 'Total'], {
    class: 'counts',
    numeric: [...statuses, 'Total'],
  });
  t.body.id = 'outbox-count-rows';
  fill(
    t.body,
    kinds.map((k) =>
      h(
        'tr',
        { 'data-kind': k },
        h('th', { scope: 'row' }, k),
        statuses.map((s) => h('td', { class: 'num', 'data-status': s }, String(at(k, s)))),
        h('td', { class: 'num total' }, String(statuses.reduce((n, s) => n + at(k, s), 0))),
      ),
    ),
  );
  return t.el;
}

// ---------------------------------------------------------------- reconciler

function reconcilerView() {
  const last = statCard('Last pass', 'stat-last-pass');
  const avg = statCard('Average duration', 'stat-avg-pass');
  const failed = statCard('Passes with errors', 'stat-pass-errors');
  const totals = h('div', { id: 'pass-totals' });
  const passes = table(
    'Recent reconciler passes, newest first',
    ['Started', 'Reconciler', 'Duration', 'Counters (non-zero)', 'Error'],
    {
      numeric: ['Duration'],
    },
  );
  passes.body.id = 'pass-rows';
  const el = h(
    'section',
    { 'aria-labelledby': 'page-title' },
    h('div', { class: 'page-head' }, h('h1', { id: 'page-title', tabindex: '-1' }, 'Reconciler passes')),
    h('div', { class: 'grid three' }, last.el, avg.el, failed.el),
    h(
      'section',
      { class: 'card', 'aria-labelledby': 'totals-h' },
      h('h2', { id: 'totals-h' }, 'Counters over these passes'),
      totals,
    ),
    h(
      'section',
      { class: 'card', 'aria-labelledby': 'passes-h' },
      h('h2', { id: 'passes-h' }, 'Recent passes'),
      passes.el,
    ),
  );
  async function refresh() {
    const { items } = await api('GET', '/api/v1/reconciler/passes?limit=25');
    last.value.textContent = items.length ? ago(items[0].finished_at) : 'none yet';
    avg.value.textContent = items.length
      ? duration(Math.round(items.reduce((n, p) => n + p.duration_ms, 0) / items.length))
      : '—';
    failed.value.textContent = String(items.filter((p) => p.error).length);
    const sums = {};
    for (const p of items) for (const [k, v] of Object.entries(p.counters)) sums[k] = (sums[k] ?? 0) + v;
    const keys = Object.keys(sums).sort();
    fill(
      totals,
      keys.length
        ? h(
            'ul',
            { class: 'chips counters' },
            keys.map((k) =>
              h(
                'li',
                { class: sums[k] ? 'nonzero' : null },
                h('span', null, k),
                h('span', { class: 'count' }, String(sums[k])),
              ),
            ),
          )
        : h('p', { class: 'muted' }, 'No passes recorded yet.'),
    );
    fill(
      passes.body,
      items.length
        ? items.map((p) => {
            const nonzero = Object.entries(p.counters).filter(([, v]) => v);
            return h(
              'tr',
              { 'data-pass': p.id },
              h('td', null, time(p.started_at)),
              h('td', { class: 'mono small' }, p.reconciler),
              h('td', { class: 'num' }, duration(p.duration_ms)),
              h(
                'td',
                null,
                nonzero.length
                  ? h(
                      'span',
                      { class: 'kv' },
                      nonzero.map(([k, v]) => h('span', null, `${k} ${v}`)),
                    )
                  : h('span', { class: 'muted' }, 'nothing to do'),
              ),
              h(
                'td',
                { class: 'error-cell' },
                p.error ? h('span', { class: 'error-text', title: p.error }, p.error) : dash(null),
              ),
            );
          })
        : emptyRow(passes.columns, 'No passes recorded yet.'),
    );
  }
  return { name: 'reconciler', title: 'Reconciler', el, refresh };
}

// ---------------------------------------------------------------- routing, refresh, session

/** The org's integrations as [id, name] pairs, for a page's picker. */
function integrationChoices() {
  return [...state.integrations.values()].map((i) => [i.id, i.name]);
}

const ROUTES = [
  [/^#\/runs\/([0-9a-fA-F-]{36})$/, (m) => runView(m[1].toLowerCase())],
  [/^#\/runs(?:\?(.*))?$/, (m) => historyView(new URLSearchParams(m[1] ?? ''))],
  [/^#\/integrations$/, () => integrationsView()],
  [/^#\/integrations\/([0-9a-fA-F-]{36})\/webhooks$/, (m) => deliveriesView(m[1].toLowerCase())],
  [/^#\/freshness$/, () => freshnessView([...state.integrations.keys()][0] ?? null)],
  [/^#\/freshness\/([0-9a-fA-F-]{36})$/, (m) => freshnessView(m[1].toLowerCase())],
  [/^#\/outbox$/, () => outboxView()],
  [/^#\/reconciler$/, () => reconcilerView()],
  [/^#\/budgets$/, () => budgetsView(api)],
  [/^#\/data$/, () => dataView(api, integrationChoices(), [...state.integrations.keys()][0] ?? null)],
  [/^#\/data\/([0-9a-fA-F-]{36})$/, (m) => dataView(api, integrationChoices(), m[1].toLowerCase())],
  [/^#\/activity(?:\?(.*))?$/, (m) => activityView(api, new URLSearchParams(m[1] ?? ''))],
];

async function route() {
  if (!state.session) return;
  const hash = location.hash || '#/runs';
  const match = ROUTES.map(([re, make]) => [re.exec(hash), make]).find(([m]) => m);
  if (!match) return location.replace('#/runs');
  clearError();
  try {
    await loadIntegrations();
  } catch (err) {
    showError(err);
  }
  const view = match[1](match[0]);
  state.view = view;
  document.title = `${view.title} · syncrelay`;
  for (const a of document.querySelectorAll('[data-nav]')) {
    if (a.dataset.nav === view.name) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  fill($('main'), view.el);
  await refreshNow();
  if (state.view === view) view.el.querySelector('h1')?.focus({ preventScroll: true });
}

/** Refreshes the page on screen; a call while one runs makes it run once more afterwards. */
async function refreshNow() {
  if (state.refreshing) {
    state.again = true;
    return;
  }
  state.refreshing = true;
  try {
    do {
      state.again = false;
      const view = state.view;
      if (!view?.refresh) break;
      try {
        await view.refresh();
        if (view === state.view) {
          $('updated').textContent = `Updated ${localTime(new Date()).slice(11)}`;
          if ($('error').dataset.fromRefresh) clearError();
        }
      } catch (err) {
        if (view === state.view && state.session) showError(err, true);
      }
    } while (state.again);
  } finally {
    state.refreshing = false;
  }
}

function tick() {
  if (!state.session || document.hidden || !$('auto-refresh').checked) return;
  void refreshNow();
}

function showLogin(message) {
  $('app').hidden = true;
  $('login').hidden = false;
  $('login-error').textContent = message ?? '';
  $('login-token').value = '';
  $('login-token').focus();
  document.title = 'Sign in · syncrelay';
}

function signOut(message) {
  state.token = null;
  state.session = null;
  state.view = null;
  state.integrations = new Map();
  state.integrationsAt = 0;
  sessionStorage.removeItem(TOKEN_KEY);
  fill($('main'));
  $('notice').hidden = true;
  clearError();
  showLogin(message);
}

async function signIn(token) {
  state.token = token;
  try {
    state.session = await api('GET', '/dashboard/session');
  } catch (err) {
    state.token = null;
    sessionStorage.removeItem(TOKEN_KEY);
    showLogin(
      err.status === 403 ? 'This token lacks the read scope the dashboard needs.' : `Sign-in failed: ${err.message}.`,
    );
    return;
  }
  sessionStorage.setItem(TOKEN_KEY, token);
  const s = state.session;
  fill($('who'), 'org ', h('strong', null, s.org_id), h('span', { class: 'muted' }, ` · ${s.scopes.join(', ')}`));
  $('login').hidden = true;
  $('app').hidden = false;
  await route();
}

function boot() {
  $('login-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const token = $('login-token').value.trim();
    if (!token) return showLogin('Paste an API token.');
    $('login-error').textContent = '';
    void signIn(token);
  });
  $('logout').addEventListener('click', () => signOut('Signed out.'));
  $('auto-refresh').addEventListener('change', tick);
  window.addEventListener('hashchange', () => void route());
  setInterval(tick, REFRESH_MS);
  const saved = sessionStorage.getItem(TOKEN_KEY);
  if (saved) void signIn(saved);
  else showLogin();
}

boot();
