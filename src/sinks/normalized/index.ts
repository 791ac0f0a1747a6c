/** The normalized store: surfaces, the sink over them, status normalization, the metrics handler. */
export * from './surfaces.js';
export * from './status.js';
