/** The built-in synthetic provider (see `./synthetic/`): one import for the engine and tests. */
export {
  FAULT_KNOBS,
  parseSyntheticConfig,
  validateSyntheticConfig,
  SYNTHETIC_DEFAULTS,
  SYNTHETIC_LIMITS,
  type SyntheticConfig,
} from './synthetic/config.js';
export {
  decideUnit,
  draw,
  generateItems,
  windowDays,
  NO_SOURCE_KEY,
  REFERENCE_ITEMS_PER_DATASET,
  type ItemScope,
  type SyntheticItem,
  type UnitDecision,
} from './synthetic/items.js';
export { insertDailyMetrics, metricsRollupHandler, METRICS_ROLLUP } from './synthetic/metricsRollup.js';
export {
  createSyntheticProvider,
  runSyntheticUnit,
  syntheticSink,
  REFERENCE_DATASETS,
  SYNTHETIC_PROVIDER,
  SYNTHETIC_SURFACE,
  WORK_ITEM_DATASETS,
  type ExecutionOutcome,
} from './synthetic/provider.js';
