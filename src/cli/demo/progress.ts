/** Follows a run from the database and draws its progress on stderr. */
import type { Db } from '../../db/types.js';
import type { UnitCounts } from '../../domain/aggregate.js';
import { isTerminalRun } from '../../domain/statuses.js';
import type { RunRow } from '../../store/rows.js';
import { getRun } from '../../store/runs.js';
import { countUnitsByStatus } from '../../store/units.js';
import { formatDuration } from '../output.js';
import { pause } from '../signals.js';

export interface Snapshot {
  run: RunRow;
  units: UnitCounts;
  elapsedMs: number;
}

const BAR_WIDTH = 28;

/** A redrawn bar when `out` is a terminal, otherwise a plain line every `lineEveryMs`. */
export class ProgressView {
  private lastLineAt = -Infinity;

  constructor(
    private readonly out: NodeJS.WriteStream = process.stderr,
    private readonly lineEveryMs = 2000,
  ) {}

  update(s: Snapshot): void {
    if (this.out.isTTY) {
      this.out.write(`\r\x1b[2K${this.fit(bar(s))}`);
    } else if (s.elapsedMs - this.lastLineAt >= this.lineEveryMs) {
      this.lastLineAt = s.elapsedMs;
      this.out.write(`${line(s)}\n`);
    }
  }

  /** The last state, then the cursor on a fresh line. */
  finish(s: Snapshot): void {
    if (this.out.isTTY) {
      this.out.write(`\r\x1b[2K${this.fit(bar(s))}\n`);
    } else {
      this.out.write(`${line(s)}\n`);
    }
  }

  /** A wrapped line could not be redrawn with `\r`: cut it to the terminal's width. */
  private fit(text: string): string {
    const width = (this.out.columns || 80) - 1;
    return text.length > width ? text.slice(0, width) : text;
  }
}

function tally(units: UnitCounts) {
  const n = (k: keyof UnitCounts) => units[k] ?? 0;
  const total = Object.values(units).reduce((a, b) => a + (b ?? 0), 0);
  const done = n('success') + n('failed') + n('cancelled');
  return { n, total, done };
}

function bar(s: Snapshot): string {
  const { n, total, done } = tally(s.units);
  const filled = total === 0 ? 0 : Math.round((done / total) * BAR_WIDTH);
  const pct = total === 0 ? 0 : Math.floor((done / total) * 100);
  const body = '█'.repeat(filled) + '░'.repeat(BAR_WIDTH - filled);
  const extra = [
    n('running') ? `${n('running')} running` : '',
    n('retrying') ? `${n('retrying')} retrying` : '',
    n('failed') ? `${n('failed')} failed` : '',
  ].filter(Boolean);
  return (
    `  ${body} ${String(pct).padStart(3)}%  ${done}/${total} units${extra.length ? `  (${extra.join(', ')})` : ''}` +
    `  ${formatDuration(s.elapsedMs)}  [${s.run.status}]`
  );
}

function line(s: Snapshot): string {
  const { n, total, done } = tally(s.units);
  const waiting = n('planned') + n('dispatching');
  return (
    `progress: ${done}/${total} units done (success ${n('success')}, failed ${n('failed')}, running ${n('running')}, ` +
    `retrying ${n('retrying')}, waiting ${waiting}) after ${formatDuration(s.elapsedMs)}, run ${s.run.status}`
  );
}

/**
 * Polls the run every `everyMs` with short single statements (no transaction stays open, which
 * matters on the one-connection embedded database) until it is terminal, `signal` aborts or
 * `timeoutMs` passes. Returns the last snapshot.
 */
export async function followRun(
  db: Db,
  runId: string,
  opts: { view: ProgressView; signal: AbortSignal; timeoutMs: number; everyMs?: number },
): Promise<Snapshot> {
  const started = Date.now();
  for (;;) {
    const run = await getRun(db, runId);
    if (!run) throw new Error(`sync run ${runId} disappeared`);
    const snap: Snapshot = { run, units: await countUnitsByStatus(db, runId), elapsedMs: Date.now() - started };
    if (isTerminalRun(run.status) || opts.signal.aborted || snap.elapsedMs >= opts.timeoutMs) {
      opts.view.finish(snap);
      return snap;
    }
    opts.view.update(snap);
    await pause(opts.everyMs ?? 200, opts.signal);
  }
}
