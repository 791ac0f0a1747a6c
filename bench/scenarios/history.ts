import type { Scenario } from '../lib/types.js';
export const historyScenario: Scenario = { name: 'history', async run() { return []; } };
