/**
 * GitHub's `work_items.started_at`: the first `labeled` event that adds an in-progress label (the
 * labels its status rule reads as in_progress, ./status.ts), from the work_item_events stored for
 * the issue. The provider has the normalized sink run it as hooks (`GITHUB_SURFACE_HOOKS`).
 *
 * Issues and their events are read by different units, in any order, and either may be written
 * again. So both writes derive it: after issues are written, each takes its first stored start
 * event; after label events are written, each item they name that is stored takes it too. The
 * value only moves earlier (never to null), so any order of writes and re-writes ends at the first
 * start. Both writes first lock the items they touch, so two concurrent ones cannot each miss the
 * other's uncommitted rows. Rows of other providers are not touched.
 */
import type { Tx } from '../../db/types.js';
import type { SurfaceHookMap, SurfaceHooks } from '../../sdk/normalized.js';
import { advanceWorkItemStarts, lockWorkItemStarts, type WorkItemKey } from '../../store/workItemStarts.js';
import { GITHUB_IN_PROGRESS_LABELS, isGithubInProgressLabel } from './status.js';

type Row = Readonly<Record<string, unknown>>;

const GITHUB = 'github';
const GITHUB_START = { provider: GITHUB, kind: 'label', values: GITHUB_IN_PROGRESS_LABELS };

/** work_items: every GitHub issue written takes its first stored start event. */
const workItemStartHooks: SurfaceHooks = {
  before: (tx, rows) => lockWorkItemStarts(tx, itemKeys(rows)),
  after: (tx, rows) => advance(tx, itemKeys(rows)),
};

/** work_item_events: the GitHub issues a batch adds an in-progress label to take their first start. */
const workItemEventStartHooks: SurfaceHooks = {
  before: (tx, rows) => lockWorkItemStarts(tx, startedKeys(rows)),
  after: (tx, rows) => advance(tx, startedKeys(rows)),
};

/** GitHub's hooks on the normalized surfaces (`Provider.surfaceHooks`): its `started_at` rule. */
export const GITHUB_SURFACE_HOOKS: SurfaceHookMap = {
  work_items: workItemStartHooks,
  work_item_events: workItemEventStartHooks,
};

async function advance(tx: Tx, keys: WorkItemKey[]): Promise<void> {
  await advanceWorkItemStarts(tx, keys, GITHUB_START);
}

function itemKeys(rows: readonly Row[]): WorkItemKey[] {
  return rows.filter((r) => r.provider === GITHUB).map((r) => key(r, r.external_id));
}

function startedKeys(rows: readonly Row[]): WorkItemKey[] {
  return rows
    .filter((r) => r.provider === GITHUB && r.kind === GITHUB_START.kind && isStart(r.to_value))
    .filter((r) => typeof r.work_item_external_id === 'string' && r.work_item_external_id !== '')
    .map((r) => key(r, r.work_item_external_id));
}

function isStart(label: unknown): boolean {
  return typeof label === 'string' && isGithubInProgressLabel(label);
}

function key(row: Row, externalId: unknown): WorkItemKey {
  return { orgId: String(row.org_id), integrationId: String(row.integration_id), externalId: String(externalId) };
}
