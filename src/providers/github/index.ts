/** The GitHub provider: one import for the engine and tests. */
export {
  createGithubClient,
  githubLimitSignal,
  githubObservation,
  GithubOctokit,
  SECONDARY_FALLBACK_MS,
} from './client.js';
export { GITHUB_DEFAULT_BASE_URL, parseGithubConfig, validateSource, type GithubConfig } from './config.js';
export {
  createGithubProvider,
  runGithubUnit,
  GITHUB_DATASETS,
  GITHUB_PROVIDER,
  type GithubProviderOptions,
} from './provider.js';
