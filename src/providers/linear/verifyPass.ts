/** What one pass of a Linear verify reads (./verify.ts runs it; ./verifyComments.ts makes the comments'). */

/** A query of ours: its operation name and text. */
export interface Query {
  name: string;
  text: string;
}

/**
 * One pass of a Linear verify: the team's rows of `surface`, listed by `list` (a query whose root
 * connection `field` takes `$filter`, `$first`, `$after` and orders by `updatedAt`; `filter(upTo)`
 * its filter at or before `upTo`, Linear's text of a time, or unbounded), confirmed by `confirm` (a
 * query of `$ids`, `$first`), the missing and stale written by `fetch`.
 */
export interface LinearPass {
  surface: string;
  list: { query: Query; field: string; filter(upTo: string | null): Record<string, unknown> };
  confirm: { query: Query; field: string };
  fetch(ids: readonly string[]): Promise<void>;
}
