/** The plan a verify run of an integration would make at `now` (the planner alone: nothing written). */
import { ManualClock } from '../../src/clock.js';
import type { Db } from '../../src/db/types.js';
import type { Engine } from '../../src/engine.js';
import { computePlan } from '../../src/planning/planner.js';
import { getIntegration } from '../../src/store/integrations.js';

export async function verifyPlan(db: Db, engine: Engine, orgId: string, integrationId: string, now: Date) {
  const row = (await getIntegration(db, integrationId))!;
  const deps = { registry: engine.ctx.registry, clock: new ManualClock(now) };
  return computePlan(db, deps, row, { orgId, integrationId, mode: 'verify', triggeredBy: 'api' });
}
