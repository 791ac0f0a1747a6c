/** The chaos run's progress on stderr: phase, faults injected, runs terminal / triggered, units done. */
import type { Db } from '../db/types.js';

export interface ProgressState {
  phase: string;
  elapsedMs: number;
  faults: number;
  faultsByKind: Record<string, number>;
  runsTriggered: number;
  runsPlanned: number;
}

interface Counts {
  runsTerminal: number;
  runs: number;
  unitsDone: number;
  units: number;
}

/** Redraws one line on a terminal, or prints a line every few seconds otherwise. */
export class ChaosProgress {
  private counts: Counts = { runsTerminal: 0, runs: 0, unitsDone: 0, units: 0 };
  private timer: NodeJS.Timeout | null = null;
  private lastLine = 0;
  private polling = false;

  constructor(
    private readonly db: Db,
    private readonly orgId: string,
    private readonly state: () => ProgressState,
    private readonly out: NodeJS.WriteStream = process.stderr,
    private readonly lineEveryMs = 5000,
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.tick(), 1000);
    this.timer.unref();
  }

  /** Stops and ends the line (a final state on a terminal). */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    if (this.out.isTTY) this.out.write(`\r\x1b[2K${this.fit(this.line())}\n`);
  }

  private async tick(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    try {
      const s = this.db.schema;
      const { rows } = await this.db.query<Counts>(
        `SELECT (SELECT count(*)::int FROM ${s.sync_runs}
                  WHERE org_id = $1 AND status IN ('success','partial_failed','failed','cancelled')) AS "runsTerminal",
                (SELECT count(*)::int FROM ${s.sync_runs} WHERE org_id = $1) AS runs,
                (SELECT count(*)::int FROM ${s.sync_run_units}
                  WHERE org_id = $1 AND status IN ('success','failed','cancelled')) AS "unitsDone",
                (SELECT count(*)::int FROM ${s.sync_run_units} WHERE org_id = $1) AS units`,
        [this.orgId],
      );
      this.counts = rows[0] ?? this.counts;
    } catch {
      // The display only: the next tick tries again.
    } finally {
      this.polling = false;
    }
    if (this.out.isTTY) this.out.write(`\r\x1b[2K${this.fit(this.line())}`);
    else if (Date.now() - this.lastLine >= this.lineEveryMs) {
      this.lastLine = Date.now();
      this.out.write(`${this.line()}\n`);
    }
  }

  private line(): string {
    const s = this.state();
    const c = this.counts;
    const kinds = Object.entries(s.faultsByKind)
      .map(([k, n]) => `${k} ${n}`)
      .join(', ');
    return (
      `chaos ${s.phase} ${Math.round(s.elapsedMs / 1000)} s · ` +
      `runs ${c.runsTerminal}/${c.runs} terminal (${s.runsTriggered}/${s.runsPlanned} triggered)` +
      ` · units ${c.unitsDone}/${c.units} done · faults ${s.faults}${kinds ? ` (${kinds})` : ''}`
    );
  }

  private fit(text: string): string {
    const width = (this.out.columns || 100) - 1;
    return text.length > width ? text.slice(0, width) : text;
  }
}
