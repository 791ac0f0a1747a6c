/**
 * `syncrelay chaos --provider github|linear|jira --webhooks`: signed deliveries posted at the run's API server
 * while workers and reconcilers are killed, publishes fail and PostgreSQL connections are cut; the
 * webhook invariant PASSes with every other one. And the invariant itself, over hand-built rows:
 * a healthy history passes; a delivery left uncovered, one read before it was received, one
 * acknowledged but not recorded, two runs in one debounce group, a remembered run left — each FAILs.
 */
import { describe, expect, it } from 'vitest';
import {
  judgeWebhooks,
  type DeliveryRow,
  type WebhookFacts,
  type WebhookRunRow,
} from '../../src/chaos/checkWebhooks.js';
import { PG_BASE, REDIS_URL } from '../helpers/pg.js';
import { passingChaos } from './passingChaos.js';

const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const t = (ms: number) => new Date(T0 + ms);
const REPO = 'acme/api';

function delivery(
  id: string,
  atMs: number,
  outcome: string | null,
  runId: string | null,
  status = 'received',
): DeliveryRow {
  return { delivery_id: id, status, outcome, source: REPO, sync_run_id: runId, received_at: t(atMs) };
}

function run(id: string, leftPlannedMs: number, status = 'success'): WebhookRunRow {
  return { id, status, triggered_by: 'webhook', left_planned: t(leftPlannedMs) };
}

/** d1 arms r1, d2 joins it, d2 is redelivered; r1 leaves planned at 1 s and reads the repository at 1.2 s. */
function healthy(): WebhookFacts {
  return {
    deliveries: [
      delivery('d1', 0, 'armed', 'r1'),
      delivery('d2', 300, 'coalesced', 'r1'),
      delivery('d2', 600, null, null, 'duplicate'),
    ],
    runs: new Map([['r1', run('r1', 1000)]]),
    reads: new Map([[`r1 ${REPO}`, t(1200)]]),
    pendingRows: 0,
  };
}

const input = (accepted: [string, number][]) => ({
  integrationId: 'i1',
  debounceMs: 1000,
  accepted: new Map(accepted),
  summary: 'hand-built',
});
const ACCEPTED: [string, number][] = [
  ['d1', 1],
  ['d2', 2],
];

describe('the webhook invariant (hand-built rows)', () => {
  it('passes a healthy history', () => {
    const r = judgeWebhooks(healthy(), input(ACCEPTED));
    expect(r.ok, JSON.stringify(r)).toBe(true);
    expect(r.checked).toContain('2 received');
  });

  it('fails a delivery that armed a run and has no covering run', () => {
    const f = healthy();
    f.deliveries.push(delivery('d3', 2000, 'pending', null));
    const r = judgeWebhooks(f, input([...ACCEPTED, ['d3', 1]]));
    expect(r.ok).toBe(false);
    expect(r.examples.join('\n')).toMatch(/delivery d3 .*no run covers it/);
  });

  it('fails a delivery whose run read its repository before it was received', () => {
    const f = healthy();
    f.reads.set(`r1 ${REPO}`, t(200));
    const r = judgeWebhooks(f, input(ACCEPTED));
    expect(r.ok).toBe(false);
    expect(r.examples.join('\n')).toMatch(/delivery d2 .*started reading .*before/);
  });

  it('fails a delivery acknowledged with 202 that has no received row', () => {
    const r = judgeWebhooks(healthy(), input([...ACCEPTED, ['lost', 1]]));
    expect(r.ok).toBe(false);
    expect(r.examples).toContain('delivery lost: answered 202 1 time(s), 0 received row(s)');
  });

  it('fails two runs armed in one debounce group, and a cancelled cover', () => {
    const f = healthy();
    f.deliveries[1] = delivery('d2', 300, 'armed', 'r2');
    f.runs.set('r2', run('r2', 1300, 'cancelled'));
    f.reads.set(`r2 ${REPO}`, t(1400));
    const r = judgeWebhooks(f, input(ACCEPTED));
    expect(r.ok).toBe(false);
    const text = r.examples.join('\n');
    expect(text).toContain(`${REPO}: its deliveries name 2 runs, more than its 1 debounce group(s)`);
    expect(text).toMatch(/delivery d2 .*ended cancelled/);
  });

  it('fails a remembered run left at the end, and a webhook run no delivery names', () => {
    const f = healthy();
    f.pendingRows = 1;
    f.runs.set('orphan', run('orphan', 5000));
    const r = judgeWebhooks(f, input(ACCEPTED));
    expect(r.ok).toBe(false);
    expect(r.examples).toEqual([
      'webhook run orphan: no delivery names it',
      '1 webhook_pending_runs row(s) left at the end',
    ]);
  });
});

for (const [provider, seed] of [
  ['github', '20270117'],
  ['linear', '20270211'],
  ['jira', '20270212'],
] as const) {
  describe(`syncrelay chaos --provider ${provider} --webhooks (bounded)`, () => {
    it('every acknowledged delivery recorded once and covered, under engine faults', { timeout: 300_000 }, async () => {
      const args = [
        'chaos',
        ...['--provider', provider, '--webhooks', '--edits-per-second', '2'],
        ...['--faults', 'worker-kill,reconciler-kill,publish-fail,duplicate-delivery,pg-terminate'],
        ...['--runs', '4', '--duration', '15', '--workers', '2', '--reconcilers', '2', '--concurrency', '4'],
        ...['--slack', '60', '--seed', seed, '--json'],
      ];
      const env = { DATABASE_URL: `${PG_BASE}/postgres`, REDIS_URL };
      const report = await passingChaos(args, { env, timeoutMs: 280_000 });
      const hooks = report.invariants.find((i) => i.id === 'webhook_deliveries_covered');
      expect(hooks?.ok, JSON.stringify(hooks)).toBe(true);
      expect(hooks!.checked).toMatch(/[1-9]\d* answered 202/);
      expect(hooks!.checked).toMatch(/0 never acknowledged/);
      // Deliveries armed or joined runs: the invariant had coverage to check.
      expect(hooks!.checked).toMatch(/[1-9]\d* webhook runs/);
      expect(Object.values(report.faults.injected).reduce((a, b) => a + (b ?? 0), 0)).toBeGreaterThan(0);
      console.info(`chaos --provider ${provider} --webhooks: ${hooks!.checked}`);
    });
  });
}
