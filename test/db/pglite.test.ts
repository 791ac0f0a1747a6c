import { migrate } from '../../src/db/migrator.js';
import { PgliteDb } from '../../src/db/pglite.js';
import { createSyntheticProvider } from '../../src/providers/synthetic.js';
import { describeDbConformance } from './db.suite.js';

describeDbConformance('PgliteDb (in memory)', async () => {
  const db = await PgliteDb.open();
  await migrate(db, { providers: [createSyntheticProvider()] });
  return { db, concurrent: false, close: () => db.close() };
});
