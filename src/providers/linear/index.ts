/** The Linear provider: one import for the engine and tests. */
export {
  authorizationHeader,
  COMPLEXITY_ERROR_CODE,
  createLinearClient,
  LIMIT_FALLBACK_MS,
  linearLimitSignal,
  linearObservation,
  type LinearClient,
} from './client.js';
export { LINEAR_DEFAULT_API_URL, parseLinearConfig, validateSource, type LinearConfig } from './config.js';
export { allQueries } from './queries.js';
export {
  createLinearProvider,
  runLinearUnit,
  LINEAR_COMPLEXITY_BUDGET,
  LINEAR_DATASETS,
  LINEAR_PAGE_DEFAULTS,
  LINEAR_PROVIDER,
  type LinearProviderOptions,
} from './provider.js';
