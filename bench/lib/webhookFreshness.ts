/**
 * One shape of the webhook-freshness benchmark: the emulator pointed at the shape's API server, a
 * driver editing issues at a fixed rate spread over every repository (each edit's wall time and the
 * `updated_at` it gave the issue kept), and a watcher that polls the normalized store (one query
 * per ~100 ms over the issues with an edit not landed yet) and records when each edit's row shows
 * its `updated_at`. After the driver stops, the sender is flushed and the watcher goes on until
 * every edit has landed or `settleMs` passes (both within that time); the scenario then waits for
 * the install to be idle (no live run, nothing remembered) so the next shape starts clean.
 */
import type { Db } from '../../src/db/types.js';
import type { GithubEmulator, WebhookStats } from '../../src/emulators/github/index.js';
import type { ItemRecord, RepoRecord } from '../../src/emulators/github/model.js';
import type { ShapeEngine } from './webhookFreshnessStack.js';

/** One edit the driver made. */
export interface Edit {
  key: string;
  source: string;
  /** Wall time of the edit (epoch ms). */
  at: number;
  /** The issue's `updated_at` after it (epoch ms, whole seconds). */
  updated: number;
  /** Wall time the watcher first saw the row at or past `updated` (null: never). */
  landedAt: number | null;
}

export interface DriveOptions {
  /** Edits per second. */
  rate: number;
  durationMs: number;
  /** How often the watcher polls the store. */
  pollMs: number;
  /** How long the watcher goes on after the sender flushed. */
  settleMs: number;
}

/** Every issue of the emulator, interleaved over the repositories (the k-th of each in turn). */
export function editTargets(emu: GithubEmulator): { repo: RepoRecord; item: ItemRecord }[] {
  const lists = emu.data.repos.map((repo) => repo.items.filter((i) => !i.pull).map((item) => ({ repo, item })));
  const longest = Math.max(0, ...lists.map((l) => l.length));
  const out: { repo: RepoRecord; item: ItemRecord }[] = [];
  for (let k = 0; k < longest; k++) {
    for (const l of lists) {
      const target = l[k];
      if (target) out.push(target);
    }
  }
  return out;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls the rows of the edits not landed yet and stamps those whose row caught up. */
class Watcher {
  polls = 0;
  private stopped = false;

  constructor(
    private readonly db: Db,
    private readonly integrationId: string,
    private readonly edits: Edit[],
  ) {}

  async run(pollMs: number): Promise<void> {
    while (!this.stopped) {
      const started = performance.now();
      await this.poll();
      await sleep(Math.max(0, pollMs - (performance.now() - started)));
    }
  }

  stop(): void {
    this.stopped = true;
  }

  outstanding(): Edit[] {
    return this.edits.filter((e) => e.landedAt === null);
  }

  private async poll(): Promise<void> {
    const open = this.outstanding();
    if (open.length === 0) return;
    this.polls++;
    const keys = [...new Set(open.map((e) => e.key))];
    const { rows } = await this.db.query<{ external_id: string; updated_at: Date | null }>(
      `SELECT external_id, updated_at FROM ${this.db.schema.table('work_items')}
        WHERE integration_id = $1 AND external_id = ANY($2::text[])`,
      [this.integrationId, keys],
    );
    const now = Date.now();
    const stored = new Map(rows.map((r) => [r.external_id, r.updated_at?.getTime() ?? 0]));
    for (const e of open) if ((stored.get(e.key) ?? 0) >= e.updated) e.landedAt = now;
  }
}

/** Drives `rate` edits per second for `durationMs` against `se`'s API and watches them land. */
export async function driveShape(
  emu: GithubEmulator,
  se: ShapeEngine,
  target: { integrationId: string; secret: string },
  db: Db,
  o: DriveOptions,
  note: (m: string) => void,
): Promise<{ edits: Edit[]; startedAt: number; polls: number; sender: WebhookStats; flushMs: number | null }> {
  const url = `${se.url}/api/v1/webhooks/github/${target.integrationId}`;
  emu.setWebhookTarget({ url, secret: target.secret });
  const sender = emu.webhooks!;
  const targets = editTargets(emu).filter(({ item }) => item.deletedAt === undefined);
  const login = emu.data.org.login;
  const edits: Edit[] = [];
  const watcher = new Watcher(db, target.integrationId, edits);
  const watching = watcher.run(o.pollMs);
  const startedAt = Date.now();
  const t0 = performance.now();
  const total = Math.round((o.rate * o.durationMs) / 1000);
  while (edits.length < total) {
    const due = Math.min(total, Math.floor(((performance.now() - t0) / 1000) * o.rate) + 1);
    while (edits.length < due) {
      const { repo, item } = targets[edits.length % targets.length]!;
      emu.edit.touch(item.number, repo);
      const source = `${login}/${repo.name}`;
      edits.push({ key: `${source}#${item.number}`, source, at: Date.now(), updated: item.updatedAt, landedAt: null });
    }
    await sleep(Math.max(1, 1000 / o.rate / 2));
  }
  note(`${edits.length} edits made; flushing the sender`);
  // The flush and the settling share one deadline.
  const driven = performance.now();
  const deadline = driven + o.settleMs;
  const flushed = await Promise.race([sender.flush().then(() => true), sleep(o.settleMs).then(() => false)]);
  const flushMs = flushed ? Math.round(performance.now() - driven) : null;
  const left = watcher.outstanding().length;
  note(`${flushed ? 'sender flushed' : 'sender not flushed'} (${JSON.stringify(sender.stats())}); ${left} not landed`);
  while (watcher.outstanding().length > 0 && performance.now() < deadline) await sleep(o.pollMs);
  note(`${watcher.outstanding().length} edits not landed after the settle time`);
  watcher.stop();
  await watching;
  emu.setWebhookTarget(null);
  return { edits, startedAt, polls: watcher.polls, sender: sender.stats(), flushMs };
}

/** Waits (bounded) until the integration has no live run and nothing remembered; false on timeout. */
export async function waitIdle(db: Db, integrationId: string, timeoutMs: number): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    const { rows } = await db.query<{ live: number; pending: number }>(
      `SELECT (SELECT count(*)::int FROM ${db.schema.sync_runs}
                WHERE integration_id = $1 AND status IN ('planned', 'dispatching')) AS live,
              (SELECT count(*)::int FROM ${db.schema.webhook_pending_runs} WHERE integration_id = $1) AS pending`,
      [integrationId],
    );
    if (rows[0]!.live === 0 && rows[0]!.pending === 0) return true;
    await sleep(200);
  }
  return false;
}
