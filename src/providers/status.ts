/**
 * Status normalization for every built-in provider family: the input names its family and carries
 * what that family's rule reads (github/status.ts, linear/status.ts, jira/status.ts).
 */
import { ValidationError } from '../errors.js';
import type { WorkItemStatus } from '../sdk/normalized.js';
import { githubStatus, type GithubStatusInput } from './github/status.js';
import { jiraStatus, type JiraStatusInput } from './jira/status.js';
import { linearStatus, type LinearStatusInput } from './linear/status.js';

export type StatusInput =
  | ({ provider: 'github' } & GithubStatusInput)
  | ({ provider: 'linear' } & LinearStatusInput)
  | ({ provider: 'jira' } & JiraStatusInput);

/**
 * Maps a provider's status onto the normalized one (its own text goes to `status_raw`). Values are
 * matched ignoring case and surrounding spaces; a value outside the family's list throws a
 * `ValidationError` naming the field (`status.state`, `status.stateType`, `status.category`), an
 * unknown family one naming `status.provider`.
 */
export function normalizeStatus(input: StatusInput): WorkItemStatus {
  switch (input.provider) {
    case 'github':
      return githubStatus(input);
    case 'linear':
      return linearStatus(input);
    case 'jira':
      return jiraStatus(input);
    default:
      throw new ValidationError('status.provider', `unknown provider family ${JSON.stringify(providerOf(input))}`);
  }
}

function providerOf(input: never): unknown {
  return (input as { provider?: unknown }).provider;
}
