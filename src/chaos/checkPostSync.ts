/**
 * post_sync from the outbox's own history and the once-only ledger (SPEC §6, §12): in at-most-once
 * mode a post_sync row is marked before it is published — so it is claimed once (again only when a
 * claim died before its mark, which published nothing), every delivery comes after its mark and the
 * row never returns to pending; in exactly-once mode it is acknowledged once, after the receipts.
 * And every terminal run with successful units has exactly one ledger row and one post_sync row.
 * The judging is pure (over events), so each rule is tested on hand-built histories.
 */
import type { PostSyncDelivery } from '../config.js';
import type { Db } from '../db/types.js';
import { auditTables } from './database.js';
import { finding, type CheckContext, type InvariantResult } from './findings.js';

/** One change of a post_sync outbox row, as the audit trigger saw it. */
export interface OutboxEvent {
  at: Date;
  status: string;
  claimed: boolean;
  attempts: number;
  availableAt: Date;
}

/** A run's post_sync row: its changes in order, and when each receipt of the run was inserted. */
export interface PostSyncTrail {
  runId: string;
  events: OutboxEvent[];
  receipts: Date[];
}

const iso = (d: Date) => d.toISOString();

/** What is wrong with one row's history under `mode` (empty: nothing). */
export function judgePostSyncTrail(t: PostSyncTrail, mode: PostSyncDelivery): string[] {
  const out: string[] = [];
  const row = `run ${t.runId}: post_sync row`;
  let prev: OutboxEvent | undefined;
  let markedAt: Date | null = null;
  let claims = 0;
  let marks = 0;
  let pendingAgain = false;
  let redeliveries = 0;
  let firstRedelivery: string | null = null;
  for (const e of t.events) {
    const claim = e.claimed && (!prev || e.attempts > prev.attempts);
    if (claim) claims += 1;
    if (claim && markedAt) out.push(`${row} claimed again at ${iso(e.at)}, after it was marked at ${iso(markedAt)}`);
    if (e.status === 'dispatched' && prev?.status !== 'dispatched') {
      marks += 1;
      markedAt ??= e.at;
      if (marks === 2) out.push(`${row} marked a second time at ${iso(e.at)}`);
    }
    if (e.status === 'pending' && markedAt && !pendingAgain) {
      pendingAgain = true;
      out.push(`${row} returned to pending at ${iso(e.at)}, after it was marked at ${iso(markedAt)}`);
    }
    // A claim that ends unmarked keeps its due time when it is released (nothing was published); a
    // new due time means the row was published while claimed and left for a later delivery.
    const leftForRedelivery =
      prev?.claimed && !e.claimed && e.status === 'pending' && e.availableAt.getTime() !== prev.availableAt.getTime();
    if (mode === 'at-most-once' && leftForRedelivery) {
      redeliveries += 1;
      firstRedelivery ??= `at ${iso(e.at)} (due ${iso(e.availableAt)}) by claim ${claims}`;
    }
    prev = e;
  }
  if (firstRedelivery) {
    out.push(
      `${row} left pending for redelivery ${redeliveries} time(s), first ${firstRedelivery}: ` +
        'published while claimed, before any mark',
    );
  }
  const last = t.events.at(-1);
  if (last && last.status !== 'dispatched')
    out.push(
      `${row} still ${last.status} after ${claims} claim(s): never ${mode === 'exactly-once' ? 'acked' : 'marked'}`,
    );
  for (const r of t.receipts) {
    if (mode === 'at-most-once' && (!markedAt || r < markedAt)) {
      out.push(
        `${row} delivered (receipt at ${iso(r)}) before it was marked` +
          (markedAt ? ` (at ${iso(markedAt)})` : ' (never marked)') +
          ` — claimed ${claims} time(s)`,
      );
    }
    if (mode === 'exactly-once' && markedAt && r > markedAt)
      out.push(`${row} acknowledged at ${iso(markedAt)}, before its receipt at ${iso(r)}`);
  }
  return out;
}

export async function checkPostSyncOutbox(db: Db, ctx: CheckContext): Promise<InvariantResult> {
  const s = db.schema;
  const a = auditTables(s);
  type Ev = { run_id: string; at: Date; status: string; claimed: boolean; attempts: number; available_at: Date };
  const { rows: events } = await db.query<Ev>(
    `SELECT e.run_id, e.at, e.status, e.claimed, e.attempts, e.available_at
       FROM ${a.outboxEvents} e JOIN ${s.sync_runs} r ON r.id = e.run_id
      WHERE e.kind = 'post_sync' AND r.org_id = $1 ORDER BY e.run_id, e.id`,
    [ctx.orgId],
  );
  const { rows: receipts } = await db.query<{ run_id: string; at: Date }>(
    `SELECT e.run_id, e.at FROM ${a.receiptEvents} e JOIN ${s.sync_runs} r ON r.id = e.run_id
      WHERE r.org_id = $1 ORDER BY e.id`,
    [ctx.orgId],
  );
  const trails = new Map<string, PostSyncTrail>();
  const trail = (runId: string) => {
    let x = trails.get(runId);
    if (!x) trails.set(runId, (x = { runId, events: [], receipts: [] }));
    return x;
  };
  for (const e of events) {
    trail(e.run_id).events.push({
      at: e.at,
      status: e.status,
      claimed: e.claimed,
      attempts: e.attempts,
      availableAt: e.available_at,
    });
  }
  for (const r of receipts) trail(r.run_id).receipts.push(r.at);
  const examples = [...trails.values()].flatMap((t) => judgePostSyncTrail(t, ctx.postSync));
  const checked = `${trails.size} post_sync rows, ${events.length} changes, ${receipts.length} receipts`;
  return ctx.postSync === 'exactly-once'
    ? finding('post_sync_acked_once', 'each post_sync row acknowledged once, after its receipts', {
        checked,
        examples,
      })
    : finding(
        'post_sync_marked_before_publish',
        'each post_sync row claimed once, marked before its publish, never pending again',
        { checked, examples },
      );
}

/** A terminal run and what it has of the once-only machinery. */
export interface LedgerFacts {
  runId: string;
  status: string;
  successes: number;
  ledgerRows: number;
  postSyncRows: number;
}

export function judgeLedger(r: LedgerFacts): string[] {
  const out: string[] = [];
  const what = `run ${r.runId} (${r.status}, ${r.successes} successful units)`;
  if (r.ledgerRows > 1) out.push(`${what}: ${r.ledgerRows} ledger rows`);
  if (r.postSyncRows > 1) out.push(`${what}: ${r.postSyncRows} post_sync rows`);
  if (r.successes > 0 && r.ledgerRows === 0) out.push(`${what}: no sync_run_post_dispatches row`);
  if (r.successes > 0 && r.postSyncRows === 0) out.push(`${what}: no post_sync outbox row`);
  return out;
}

export async function checkLedger(db: Db, ctx: CheckContext): Promise<InvariantResult> {
  const s = db.schema;
  const { rows } = await db.query<LedgerFacts>(
    `SELECT r.id AS "runId", r.status,
            (SELECT count(*)::int FROM ${s.sync_run_units} u
              WHERE u.sync_run_id = r.id AND u.status = 'success') AS successes,
            (SELECT count(*)::int FROM ${s.sync_run_post_dispatches} l
              WHERE l.sync_run_id = r.id AND l.kind = 'post_sync') AS "ledgerRows",
            (SELECT count(*)::int FROM ${s.sync_dispatch_outbox} o
              WHERE o.sync_run_id = r.id AND o.kind = 'post_sync') AS "postSyncRows"
       FROM ${s.sync_runs} r
      WHERE r.org_id = $1 AND r.status IN ('success', 'partial_failed', 'failed', 'cancelled')`,
    [ctx.orgId],
  );
  const due = rows.filter((r) => r.successes > 0).length;
  return finding(
    'post_sync_ledger_once',
    'one ledger row and one post_sync row per terminal run with successful units',
    {
      checked: `${rows.length} terminal runs, ${due} with successful units`,
      examples: rows.flatMap(judgeLedger),
    },
  );
}
