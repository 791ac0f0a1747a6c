/**
 * The normalized store's vocabulary (docs/normalized-store.md), shared by the providers that map
 * onto it and the sink that checks and writes it: the closed lists some columns take, and the
 * hooks a provider may have the sink run around a write of a surface.
 */
import type { Tx } from '../db/types.js';

/** `work_items.status`: each provider maps its own status onto one of these (its text goes to `status_raw`). */
export const WORK_ITEM_STATUSES = ['todo', 'in_progress', 'done', 'cancelled'] as const;
export type WorkItemStatus = (typeof WORK_ITEM_STATUSES)[number];

/** `work_item_events.kind`. */
export const WORK_ITEM_EVENT_KINDS = ['state', 'label', 'assignee', 'other'] as const;

/** `pull_requests.state`. */
export const PULL_REQUEST_STATES = ['open', 'closed', 'merged'] as const;

/** `pull_request_reviews.state` (GitHub's review states; other hosts map onto them). */
export const REVIEW_STATES = ['APPROVED', 'CHANGES_REQUESTED', 'COMMENTED', 'DISMISSED', 'PENDING'] as const;

/**
 * What a surface does around its upserts, in the same transaction (so under the same lease check):
 * `before` once the lease is proven and before any row is written (e.g. to take locks), `after`
 * once every row is written (e.g. to derive columns of other rows). Each gets the checked batch.
 */
export interface SurfaceHooks {
  before?(tx: Tx, rows: readonly Record<string, unknown>[]): Promise<void>;
  after?(tx: Tx, rows: readonly Record<string, unknown>[]): Promise<void>;
}

/** Hooks by surface name: what one provider has the sink run around writes of those surfaces. */
export type SurfaceHookMap = Readonly<Record<string, SurfaceHooks>>;

/**
 * One source's rows of one surface a provider deletes from (work_items, pull_requests, …), as a
 * verify compares them with the provider's listing: `source` is the container (repository,
 * project or team key), null for members (the whole integration).
 */
export interface VerifyScope {
  orgId: string;
  integrationId: string;
  provider: string;
  surface: string;
  source: string | null;
}

/** One stored object as a verify compares it: its id, the provider's update time stored, its tombstone. */
export interface StoredEntry {
  externalId: string;
  updatedAt: Date | null;
  deletedAt: Date | null;
}
