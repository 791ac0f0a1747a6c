/** The normalized store: surfaces, the sink over them, status normalization, the metrics handler. */
export * from './surfaces.js';
export * from './status.js';
export * from './sink.js';
export { prepareRow } from './rows.js';
export * from './metricsHandler.js';
