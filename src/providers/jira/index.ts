/** The Jira Cloud provider: one import for the engine and tests. */
export {
  createJiraClient,
  jiraLimitSignal,
  jiraObservation,
  LIMIT_FALLBACK_MS,
  type JiraClient,
  type JiraClientOptions,
} from './client.js';
export {
  authorizationFor,
  DEFAULT_SPRINT_FIELD,
  parseJiraConfig,
  PROJECT_KEY,
  validateSource,
  type JiraConfig,
} from './config.js';
export { issuesJql, jqlString, inWindow } from './jql.js';
export { adfToText } from './adf.js';
export { createJiraProvider, runJiraUnit, JIRA_DATASETS, JIRA_PROVIDER, type JiraProviderOptions } from './provider.js';
