/**
 * Each emulator's seeded work items as the normalized store should hold them, computed from the
 * emulator's own records with the documented rule (docs/normalized-store.md): status from the
 * provider's state category; `started_at` the first transition into an in-progress state (null
 * when the provider tells none); `completed_at` the transition into done (for a cancelled item:
 * when it was closed). Independent of the provider mappings it checks.
 */
import type { GithubEmulator } from '../../src/emulators/github/index.js';
import type { JiraEmulator } from '../../src/emulators/jira/index.js';
import { STATUSES } from '../../src/emulators/jira/model.js';
import type { LinearEmulator } from '../../src/emulators/linear/index.js';

export type Status = 'todo' | 'in_progress' | 'done' | 'cancelled';

export interface ExpectedItem {
  status: Status;
  createdAt: number;
  startedAt: number | null;
  /** The close time of a done or cancelled item. */
  closedAt: number | null;
}

/** Per-provider figures, as the cross-provider query reports them. */
export interface CycleFigures {
  items: number;
  statuses: Record<Status, number>;
  /** Done items with a start: their cycle times (completed − started), in ms. */
  measured: number;
  totalMs: number;
  minMs: number | null;
  maxMs: number | null;
  p50Hours: number | null;
  /** Cancelled items with a completed_at. */
  cancelledClosed: number;
}

const GITHUB_IN_PROGRESS = new Set(['in progress', 'in-progress', 'in_progress']);
const JIRA_CANCELLED = new Set(["won't do", 'duplicate', 'cannot reproduce']);
const LINEAR_STATUS: Record<string, Status> = {
  backlog: 'todo',
  unstarted: 'todo',
  triage: 'todo',
  started: 'in_progress',
  completed: 'done',
  canceled: 'cancelled',
};

/** GitHub issues (not pull requests): closed → done (not planned: cancelled); started by an in-progress label. */
export function githubItems(emu: GithubEmulator): ExpectedItem[] {
  return emu.data.repos
    .flatMap((r) => r.items)
    .filter((i) => !i.pull)
    .map((i) => {
      const labels = i.labels.map((l) => l.name.toLowerCase());
      // The emulator closes every issue as completed (its state_reason is never not_planned).
      const status: Status =
        i.closedAt !== null ? 'done' : labels.some((l) => GITHUB_IN_PROGRESS.has(l)) ? 'in_progress' : 'todo';
      const starts = i.events
        .filter((e) => e.event === 'labeled' && e.label && GITHUB_IN_PROGRESS.has(e.label.name.toLowerCase()))
        .map((e) => e.createdAt);
      const startedAt = starts.length > 0 ? Math.min(...starts) : null;
      return { status, createdAt: i.createdAt, startedAt, closedAt: i.closedAt };
    });
}

/** Linear issues: the state type; the start and the close from the issue's history of state changes. */
export function linearItems(emu: LinearEmulator): ExpectedItem[] {
  const typeOf = new Map(emu.data.states.map((s) => [s.id, s.type]));
  return emu.data.issues.map((i) => {
    const status = LINEAR_STATUS[typeOf.get(i.stateId)!]!;
    const moves = [...i.history]
      .filter((h) => h.toStateId !== undefined)
      .sort((a, b) => a.createdAt - b.createdAt)
      .map((h) => ({ at: h.createdAt, type: typeOf.get(h.toStateId!) }));
    const started = moves.find((m) => m.type === 'started')?.at ?? i.startedAt;
    const closeType = status === 'done' ? 'completed' : status === 'cancelled' ? 'canceled' : null;
    const closedAt = closeType ? (moves.filter((m) => m.type === closeType).at(-1)?.at ?? null) : null;
    return { status, createdAt: i.createdAt, startedAt: started ?? null, closedAt };
  });
}

/** Jira issues: the status category (done with a "not done" resolution: cancelled); times from the changelog. */
export function jiraItems(emu: JiraEmulator): ExpectedItem[] {
  const category = new Map(STATUSES.map((s) => [s.id, s.category]));
  return emu.data.projects
    .flatMap((p) => p.issues)
    .map((i) => {
      const cat = category.get(i.statusId)!;
      const cancelled = cat === 'done' && i.resolution !== null && JIRA_CANCELLED.has(i.resolution.toLowerCase());
      const status: Status =
        cat === 'new' ? 'todo' : cat === 'indeterminate' ? 'in_progress' : cancelled ? 'cancelled' : 'done';
      const moves = [...i.histories]
        .sort((a, b) => a.created - b.created || Number(a.id) - Number(b.id))
        .flatMap((h) => h.items.filter((x) => x.field === 'status').map((x) => ({ at: h.created, to: x.to })));
      const started = moves.find((m) => m.to !== null && category.get(m.to) === 'indeterminate')?.at ?? null;
      const doneAt = moves.filter((m) => m.to !== null && category.get(m.to) === 'done').at(-1)?.at ?? i.resolutiondate;
      return { status, createdAt: i.created, startedAt: started, closedAt: cat === 'done' ? doneAt : null };
    });
}

/** The figures the cross-provider query should report for `items`. */
export function cycleFigures(items: readonly ExpectedItem[]): CycleFigures {
  const statuses: Record<Status, number> = { todo: 0, in_progress: 0, done: 0, cancelled: 0 };
  for (const i of items) statuses[i.status]++;
  const cycles = items
    .filter((i) => i.status === 'done' && i.startedAt !== null && i.closedAt !== null)
    .map((i) => i.closedAt! - i.startedAt!)
    .sort((a, b) => a - b);
  return {
    items: items.length,
    statuses,
    measured: cycles.length,
    totalMs: cycles.reduce((a, b) => a + b, 0),
    minMs: cycles[0] ?? null,
    maxMs: cycles.at(-1) ?? null,
    p50Hours: cycles.length > 0 ? percentileCont(cycles, 0.5) / 3_600_000 : null,
    cancelledClosed: items.filter((i) => i.status === 'cancelled' && i.closedAt !== null).length,
  };
}

/**
 * The work-item-metrics handler's cycle-time percentiles per UTC day (`YYYY-MM-DD`) for `items`:
 * over the done items closed that day, closed − (started, else created), in hours, at least 0.
 */
export function dailyCycleTimes(items: readonly ExpectedItem[]): Map<string, { p50: number; p90: number }> {
  const byDay = new Map<string, number[]>();
  for (const i of items) {
    if (i.status !== 'done' || i.closedAt === null) continue;
    const day = new Date(i.closedAt).toISOString().slice(0, 10);
    const hours = Math.max(0, i.closedAt - (i.startedAt ?? i.createdAt)) / 3_600_000;
    byDay.set(day, [...(byDay.get(day) ?? []), hours]);
  }
  const out = new Map<string, { p50: number; p90: number }>();
  for (const [day, hours] of byDay) {
    const sorted = hours.sort((a, b) => a - b);
    out.set(day, { p50: percentileCont(sorted, 0.5), p90: percentileCont(sorted, 0.9) });
  }
  return out;
}

/** PostgreSQL's percentile_cont over sorted values (linear interpolation). */
export function percentileCont(sorted: readonly number[], p: number): number {
  const pos = p * (sorted.length - 1);
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (pos - lo);
}
