import type { Scenario } from '../lib/types.js';
export const latencyScenario: Scenario = { name: 'latency', async run() { return []; } };
