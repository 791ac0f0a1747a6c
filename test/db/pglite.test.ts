import { migrate } from '../../src/db/migrator.js';
import { PgliteDb } from '../../src/db/pglite.js';
import { describeDbConformance } from './db.suite.js';

describeDbConformance('PgliteDb (in memory)', async () => {
  const db = await PgliteDb.open();
  await migrate(db);
  return { db, concurrent: false, close: () => db.close() };
});
