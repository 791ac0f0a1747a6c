/**
 * What a verify run of a Jira integration plans: the reference datasets that verify (`members`,
 * `sprints`) once each, over every enabled project; the work-item family once per project, its
 * comments and history carried; `projects` and `boards` (nothing to list) not at all, and refused
 * by name.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InProcessBroker } from '../../src/broker/inprocess.js';
import { Engine } from '../../src/engine.js';
import { silentLogger } from '../../src/logger.js';
import { createJiraProvider, JIRA_DATASETS } from '../../src/providers/jira/index.js';
import { ProviderRegistry } from '../../src/providers/registry.js';
import { normalizedSink } from '../../src/sinks/normalized/index.js';
import { testSettings } from '../helpers/engine.js';
import { verifyPlan } from './verifyPlan.js';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js';

const ORG = 'org-verify-jira';
const NOW = new Date('2026-03-02T12:00:00Z');
const DATASETS = ['projects', 'members', 'sprints', 'boards', 'work-items', 'work-item-comments', 'work-item-history'];

let t: TestDatabase;
let engine: Engine;
let broker: InProcessBroker;

beforeAll(async () => {
  t = await createTestDatabase();
  broker = new InProcessBroker();
  const registry = new ProviderRegistry().register(createJiraProvider(), normalizedSink(t.db));
  engine = await Engine.open({ settings: testSettings(), db: t.db, broker, registry, logger: silentLogger() });
});
afterAll(async () => {
  await engine?.close();
  await broker?.close();
  await t?.drop();
});

async function integration(): Promise<string> {
  const created = await engine.createIntegration({
    orgId: ORG,
    provider: 'jira',
    name: 'acme-jira',
    sources: ['ENG', 'OPS'],
    datasets: DATASETS,
    config: { siteUrl: 'https://acme.atlassian.net' },
  });
  return created.id;
}

describe('a Jira verify plan', () => {
  it('declares verify on members, sprints and the work-item family only', () => {
    const verified = JIRA_DATASETS.filter((d) => d.verifies === true).map((d) => d.key);
    expect(verified).toEqual(['members', 'sprints', 'work-items', 'work-item-comments', 'work-item-history']);
  });

  it('plans members and sprints once each, the work items per project', async () => {
    const id = await integration();
    const plan = await verifyPlan(t.db, engine, ORG, id, NOW);
    const groups = plan.groups.map((g) => ({
      key: g.spec.key,
      carried: g.carried,
      source: g.source?.external_key ?? null,
      windows: g.windows.length,
    }));
    expect(groups).toEqual([
      { key: 'members', carried: [], source: null, windows: 1 },
      { key: 'sprints', carried: [], source: null, windows: 1 },
      { key: 'work-items', carried: ['work-item-comments', 'work-item-history'], source: 'ENG', windows: 1 },
      { key: 'work-items', carried: ['work-item-comments', 'work-item-history'], source: 'OPS', windows: 1 },
    ]);
  });

  it('refuses a verify of projects or boards by name', async () => {
    const id = await integration();
    for (const dataset of ['projects', 'boards']) {
      const err = await engine
        .trigger({ orgId: ORG, integrationId: id, mode: 'verify', triggeredBy: 'api', datasets: [dataset] })
        .catch((e: unknown) => e);
      expect(err).toMatchObject({ field: 'datasets', message: expect.stringContaining(`"${dataset}"`) as unknown });
    }
  });
});
