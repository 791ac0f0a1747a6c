/**
 * pino JSON lines name what they are about: every line of a run carries `runId`, unit task lines
 * `unitId`, outbox task and relay lines `outboxId`; with a tracer provider, task lines carry the
 * trace and span ids of their task span.
 */
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { InProcessBroker } from '../../src/broker/inprocess.js';
import type { TaskMessage } from '../../src/broker/types.js';
import { Engine } from '../../src/engine.js';
import { BrokerError } from '../../src/errors.js';
import { testSettings, waitFor } from '../helpers/engine.js';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js';
import { parseMetrics, valueOf } from './prom.js';
import { installRecorder } from './recorder.js';

type Line = Record<string, unknown> & { msg: string; level: number };
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Publishes fail while `down` is set. */
class FlakyBroker extends InProcessBroker {
  down = false;
  override async publish(messages: readonly TaskMessage[]): Promise<void> {
    if (this.down) throw new BrokerError('broker down (test)');
    return super.publish(messages);
  }
}

describe('log lines about runs, units and outbox rows', () => {
  let t: TestDatabase;
  let engine: Engine | undefined;
  afterEach(async () => {
    await engine?.close();
    await t?.drop();
  });

  async function open(broker = new InProcessBroker()): Promise<{ engine: Engine; lines: Line[] }> {
    t = await createTestDatabase();
    const lines: Line[] = [];
    const logger = pino({ level: 'debug' }, { write: (s: string) => void lines.push(JSON.parse(s) as Line) });
    engine = await Engine.open({ settings: testSettings(), db: t.db, broker, logger, migrate: false });
    return { engine, lines };
  }

  it('every line of a run names the run, and its unit or outbox row', async () => {
    const { engine, lines } = await open();
    const integ = await engine.createIntegration({
      orgId: 'org-log',
      provider: 'synthetic',
      name: 'logs',
      sources: ['s1', 's2'],
      datasets: ['teams', 'work-items'],
      config: { latencyMs: 0 },
    });
    engine.startWorker({ concurrency: 2 });
    await engine.startReconciler();
    const { syncRunId } = await engine.trigger({
      orgId: 'org-log',
      integrationId: integ.id,
      mode: 'full_resync',
      triggeredBy: 'manual',
    });
    await waitFor(async () => lines.some((l) => l.task === 'post_sync' && l.msg === 'task done'), 60_000);

    const about = lines.filter(
      (l) => l.runId !== undefined || l.task !== undefined || l.unitId !== undefined || l.outboxId !== undefined,
    );
    expect(about.length).toBeGreaterThan(5);
    for (const l of about) expect(l.runId, JSON.stringify(l)).toBe(syncRunId);
    for (const l of about.filter((x) => x.task === 'run_sync_unit')) expect(l.unitId, JSON.stringify(l)).toMatch(UUID);
    const outboxTasks = about.filter((x) => typeof x.task === 'string' && x.task !== 'run_sync_unit');
    for (const l of outboxTasks) expect(l.outboxId, JSON.stringify(l)).toMatch(UUID);
    const published = about.filter((l) => l.msg === 'outbox row published');
    expect(new Set(published.map((l) => l.kind))).toEqual(
      new Set(['dispatch_sync_run', 'finalize_sync_run', 'post_sync']),
    );
    for (const l of published) expect(l.outboxId).toMatch(UUID);
    expect(lines.find((l) => l.msg === 'run finalized')).toMatchObject({ runId: syncRunId, status: 'success' });
  });

  it('a failed publish is logged per outbox row with its run, and counted', async () => {
    const broker = new FlakyBroker();
    const { engine, lines } = await open(broker);
    const integ = await engine.createIntegration({
      orgId: 'org-log',
      provider: 'synthetic',
      name: 'down',
      sources: ['s1'],
      datasets: ['teams'],
      config: {},
    });
    const { syncRunId } = await engine.trigger({
      orgId: 'org-log',
      integrationId: integ.id,
      mode: 'full_resync',
      triggeredBy: 'manual',
    });
    broker.down = true;
    await engine.reconcileOnce();
    const { rows } = await engine.db.query<{ id: string }>(
      "SELECT id FROM syncrelay.sync_dispatch_outbox WHERE sync_run_id = $1 AND kind = 'dispatch_sync_run'",
      [syncRunId],
    );
    const failed = lines.filter((l) => l.msg === 'outbox publish failed');
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({ runId: syncRunId, outboxId: rows[0]!.id, kind: 'dispatch_sync_run' });
    const s = parseMetrics(await engine.metrics.metrics());
    expect(valueOf(s, 'syncrelay_relay_publish_failures_total', { kind: 'dispatch_sync_run' })).toBe(1);
    expect(valueOf(s, 'syncrelay_relay_publishes_total', { kind: 'dispatch_sync_run' })).toBe(0);
    expect(valueOf(s, 'syncrelay_outbox_rows', { kind: 'dispatch_sync_run', status: 'pending' })).toBe(1);
  });

  it('with a tracer provider, task lines carry the trace and span ids of their task span', async () => {
    const { recorder, uninstall } = installRecorder();
    try {
      const { engine, lines } = await open();
      const integ = await engine.createIntegration({
        orgId: 'org-log',
        provider: 'synthetic',
        name: 'traced',
        sources: ['s1'],
        datasets: ['teams'],
        config: { latencyMs: 0 },
      });
      engine.startWorker();
      await engine.startReconciler();
      await engine.trigger({ orgId: 'org-log', integrationId: integ.id, mode: 'full_resync', triggeredBy: 'manual' });
      await waitFor(async () => lines.some((l) => l.task === 'post_sync' && l.msg === 'task done'), 60_000);
      const trigger = recorder.spans.find((sp) => sp.name === 'syncrelay.trigger')!;
      const taskLines = lines.filter((l) => l.msg === 'task done');
      expect(taskLines.length).toBeGreaterThanOrEqual(4);
      for (const l of taskLines) {
        expect(l.traceId).toBe(trigger.traceId);
        expect(recorder.spans.find((sp) => sp.spanId === l.spanId)?.name).toBe(`syncrelay.${String(l.task)}`);
      }
    } finally {
      uninstall();
    }
  });
});
