/**
 * The normalized store's surfaces (migration 0010, docs/normalized-store.md): provider-neutral
 * tables every work tracker and git host maps its data onto. Surface name = table name.
 *
 * Every surface is keyed by (org_id, integration_id, provider, external_id) and carries
 * `last_synced_at` (the writing unit's clock time) and `raw` (jsonb: what is not modelled).
 * `first_seen_at` is set by the table's DEFAULT on insert and is not a column a row may carry, so
 * an upsert never moves it. Neither is `deleted_at` (TOMBSTONE_SURFACES): every write clears it.
 */
import type { SurfaceHooks, WorkItemStatus } from '../../sdk/normalized.js';
import type { SurfaceSpec } from '../postgres.js';

/** `work_items.status`'s type, also read from here by the metrics queries. */
export type { WorkItemStatus };

/** How a column's values are checked and bound. */
export type ColumnType = 'text' | 'text[]' | 'integer' | 'boolean' | 'timestamptz' | 'jsonb' | 'uuid';

export type ColumnTypes = Readonly<Record<string, ColumnType>>;

/** The key every normalized surface is upserted on. */
export const KEY_COLUMNS = ['org_id', 'integration_id', 'provider', 'external_id'] as const;

const COMMON: ColumnTypes = {
  org_id: 'text',
  integration_id: 'uuid',
  provider: 'text',
  external_id: 'text',
  last_synced_at: 'timestamptz',
  raw: 'jsonb',
};

/** Each surface's own columns (besides the common ones), with their types. */
export const NORMALIZED_COLUMNS = {
  repositories: {
    name: 'text', // owner/repo or project key
    description: 'text',
    url: 'text',
    private: 'boolean',
    archived: 'boolean',
    default_branch: 'text',
    created_at: 'timestamptz',
    updated_at: 'timestamptz',
  },
  teams: { key: 'text', name: 'text', description: 'text', url: 'text' },
  members: { login: 'text', name: 'text', email: 'text', avatar_url: 'text', role: 'text' },
  projects: {
    key: 'text',
    name: 'text',
    description: 'text',
    state: 'text',
    lead: 'text',
    url: 'text',
    created_at: 'timestamptz',
    updated_at: 'timestamptz',
  },
  /** Sprints, cycles and iterations alike; `container` is the team or project key. */
  sprints: {
    name: 'text',
    state: 'text',
    container: 'text',
    starts_at: 'timestamptz',
    ends_at: 'timestamptz',
    completed_at: 'timestamptz',
  },
  work_items: {
    number: 'text', // "42", "ENG-12"
    title: 'text',
    type: 'text', // issue / bug / story / task / epic / …
    status: 'text', // one of WORK_ITEM_STATUSES (the provider's status rule)
    status_raw: 'text', // the provider's own status name
    assignees: 'text[]',
    labels: 'text[]',
    created_at: 'timestamptz',
    updated_at: 'timestamptz',
    started_at: 'timestamptz', // first transition into in_progress when known, else null (GitHub: its hooks)
    completed_at: 'timestamptz', // when it closed (done or cancelled); null while open
    parent_external_id: 'text',
    container: 'text', // repository "owner/repo" or project key
    milestone: 'text', // milestone / cycle / sprint name
    url: 'text',
    archived_at: 'timestamptz', // when the provider archived it (Linear); an archive is not a delete
  },
  work_item_comments: {
    work_item_external_id: 'text',
    author: 'text',
    body: 'text',
    created_at: 'timestamptz',
    updated_at: 'timestamptz',
  },
  work_item_events: {
    work_item_external_id: 'text',
    kind: 'text', // one of WORK_ITEM_EVENT_KINDS
    actor: 'text',
    from_value: 'text',
    to_value: 'text',
    occurred_at: 'timestamptz',
  },
  pull_requests: {
    number: 'integer',
    title: 'text',
    state: 'text', // one of PULL_REQUEST_STATES
    draft: 'boolean',
    author: 'text',
    base_ref: 'text',
    head_ref: 'text',
    container: 'text', // owner/repo
    created_at: 'timestamptz',
    updated_at: 'timestamptz',
    merged_at: 'timestamptz',
    closed_at: 'timestamptz',
    additions: 'integer',
    deletions: 'integer',
    changed_files: 'integer',
    url: 'text',
  },
  pull_request_reviews: {
    pull_request_external_id: 'text',
    author: 'text',
    state: 'text', // one of REVIEW_STATES
    submitted_at: 'timestamptz',
  },
  /** external_id = sha. */
  commits: {
    sha: 'text',
    container: 'text',
    author: 'text',
    committed_at: 'timestamptz',
    message_first_line: 'text',
    additions: 'integer',
    deletions: 'integer',
  },
} as const satisfies Record<string, ColumnTypes>;

export type NormalizedSurface = keyof typeof NORMALIZED_COLUMNS;

/** Every normalized surface (= table) name. */
export const NORMALIZED_SURFACES = Object.keys(NORMALIZED_COLUMNS) as NormalizedSurface[];

/**
 * The surfaces a provider can delete from: their tables have `deleted_at` (migration 0017), set
 * only by the tombstone store (tombstones.ts) and cleared by every write of the row. A row never
 * carries it: the sink adds it, null, to each row it writes to one of these.
 */
export const TOMBSTONE_SURFACES = [
  'work_items',
  'work_item_comments',
  'pull_requests',
  'pull_request_reviews',
  'members',
  'sprints',
] as const satisfies readonly NormalizedSurface[];

export type TombstoneSurface = (typeof TOMBSTONE_SURFACES)[number];

/** Whether `surface` has `deleted_at`. */
export function isTombstoneSurface(surface: string): surface is TombstoneSurface {
  return (TOMBSTONE_SURFACES as readonly string[]).includes(surface);
}

/** The column that marks a row deleted (see TOMBSTONE_SURFACES). */
export const DELETED_AT = 'deleted_at';

/** The table the work-item-metrics post_sync handler writes (not a surface). */
export const METRICS_TABLE = 'work_item_metrics_daily';

/** Every column a row of `surface` may carry, with its type (common columns first). */
export function columnTypes(surface: NormalizedSurface): ColumnTypes {
  return { ...COMMON, ...NORMALIZED_COLUMNS[surface] };
}

/** Whether `surface` names a normalized surface. */
export function isNormalizedSurface(surface: string): surface is NormalizedSurface {
  return Object.hasOwn(NORMALIZED_COLUMNS, surface);
}

/**
 * The PostgresSink specs: plain table names (in the install's schema), all retry-safe upserts;
 * a surface with `hooks` runs them around its writes (hooks.ts).
 */
export function normalizedSurfaceSpecs(
  hooks: Partial<Record<NormalizedSurface, SurfaceHooks>> = {},
): Record<NormalizedSurface, SurfaceSpec> {
  const specs = {} as Record<NormalizedSurface, SurfaceSpec>;
  for (const surface of NORMALIZED_SURFACES) {
    const own = hooks[surface];
    specs[surface] = {
      table: surface,
      conflictColumns: [...KEY_COLUMNS],
      columns: [...Object.keys(columnTypes(surface)), ...(isTombstoneSurface(surface) ? [DELETED_AT] : [])],
      retrySafe: true,
      jsonColumns: ['raw'],
      ...(own ? { hooks: own } : {}),
    };
  }
  return specs;
}
