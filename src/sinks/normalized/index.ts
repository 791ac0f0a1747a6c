/**
 * The normalized store: its vocabulary, surfaces, the sink over them and its hooks, the metrics
 * handler, the tombstones a verify reads and marks.
 */
export * from '../../sdk/normalized.js';
export * from './surfaces.js';
export * from './sink.js';
export { combineSurfaceHooks } from './hooks.js';
export { prepareRow } from './rows.js';
export { DEFAULT_STORED_LIMITS, type StoredLimits } from './limits.js';
export * from './metricsHandler.js';
export * from './tombstones.js';
