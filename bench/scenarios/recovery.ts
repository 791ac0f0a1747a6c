import type { Scenario } from '../lib/types.js';
export const recoveryScenario: Scenario = { name: 'recovery', async run() { return []; } };
