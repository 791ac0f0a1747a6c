/**
 * The Data page: an integration's normalized rows at a glance (GET /api/v1/integrations/:id/data) —
 * rows per table with the deleted and archived among them, and the newest work items and pull
 * requests, each linked to its page at the provider (http(s) links only, opened without a referrer
 * or an opener).
 */
import { el, when } from './dom.js';

const numberText = (n) => (n === null ? '—' : n.toLocaleString('en-US'));

function headRow(columns, numeric = []) {
  return el(
    'thead',
    null,
    el(
      'tr',
      null,
      columns.map((c) => el('th', { scope: 'col', class: numeric.includes(c) ? 'num' : null }, c)),
    ),
  );
}

function surfaceTable(surfaces) {
  const columns = ['Table', 'Rows', 'Deleted', 'Archived'];
  const rows = surfaces.map((s) =>
    el(
      'tr',
      { 'data-surface': s.surface },
      el('th', { scope: 'row' }, el('code', null, s.surface)),
      el('td', { class: 'num', 'data-field': 'rows' }, numberText(s.rows)),
      el('td', { class: 'num', 'data-field': 'deleted' }, numberText(s.deleted)),
      el('td', { class: 'num', 'data-field': 'archived' }, numberText(s.archived)),
    ),
  );
  return el(
    'table',
    { id: 'data-surfaces' },
    el('caption', { class: 'visually-hidden' }, 'Rows per normalized table'),
    headRow(columns, ['Rows', 'Deleted', 'Archived']),
    el('tbody', null, rows),
  );
}

/** The item's title, linked to the provider's page when the API gave an http(s) URL. */
function titleCell(item) {
  const text = item.title ?? item.external_id;
  const label = item.number ? `${item.number} · ${text}` : text;
  const link = item.url
    ? el('a', { href: item.url, rel: 'noopener noreferrer', target: '_blank', 'data-field': 'link' }, label)
    : el('span', null, label);
  return el('td', { 'data-field': 'title' }, link);
}

function markText(item) {
  if (item.deleted_at) return 'DELETED';
  if (item.archived_at) return 'ARCHIVED';
  return '';
}

function itemTable(id, caption, items) {
  const columns = ['Item', 'Container', 'Status', 'Updated', 'Mark'];
  const rows = items.length
    ? items.map((i) =>
        el(
          'tr',
          { 'data-external-id': i.external_id, class: i.deleted_at ? 'row-deleted' : null },
          titleCell(i),
          el('td', null, i.container ?? '—'),
          el('td', { 'data-field': 'status' }, i.status ?? '—'),
          el('td', null, when(i.updated_at)),
          el('td', { 'data-field': 'mark' }, markText(i)),
        ),
      )
    : [el('tr', null, el('td', { colspan: columns.length, class: 'muted' }, 'None stored.'))];
  return el('table', { id }, el('caption', null, caption), headRow(columns), el('tbody', null, rows));
}

/** `integrations`: [id, name] pairs of the org's integrations; `id` the one shown (null: none). */
export function dataView(api, integrations, id) {
  const title = el('span', { id: 'data-integration' }, id ?? '—');
  const picker = el('select', { id: 'data-integration-pick', name: 'integration' });
  for (const [value, name] of integrations) {
    const o = el('option', { value }, name);
    o.selected = value === id;
    picker.append(o);
  }
  picker.addEventListener('change', () => location.assign(`#/data/${picker.value}`));
  const surfaces = el('div', { id: 'data-surfaces-box' });
  const items = el('div', { id: 'data-items-box' });
  const view = el(
    'section',
    { 'aria-labelledby': 'page-title' },
    el(
      'div',
      { class: 'page-head' },
      el('h1', { id: 'page-title', tabindex: '-1' }, 'Data of ', title),
      id ? el('div', { class: 'field' }, el('label', { for: 'data-integration-pick' }, 'Integration'), picker) : null,
    ),
    el(
      'section',
      { class: 'card', 'aria-labelledby': 'data-surfaces-h' },
      el('h2', { id: 'data-surfaces-h' }, 'Rows per table'),
      surfaces,
    ),
    el(
      'section',
      { class: 'card', 'aria-labelledby': 'data-items-h' },
      el('h2', { id: 'data-items-h' }, 'Newest'),
      items,
    ),
  );
  let last = null;
  async function refresh() {
    if (!id) {
      surfaces.replaceChildren(el('p', { class: 'muted' }, 'No integrations yet.'));
      return;
    }
    const r = await api('GET', `/api/v1/integrations/${id}/data`);
    const text = JSON.stringify(r);
    if (text === last) return;
    last = text;
    title.textContent = r.name;
    surfaces.replaceChildren(surfaceTable(r.surfaces));
    items.replaceChildren(
      itemTable('data-work-items', 'Work items, newest update first', r.newest_work_items),
      itemTable('data-pull-requests', 'Pull requests, newest update first', r.newest_pull_requests),
    );
  }
  return { name: 'data', title: 'Data', el: view, refresh };
}
