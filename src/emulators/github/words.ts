/** Word lists the generated names, titles and bodies are drawn from. */

export const FIRST_NAMES = [
  'ada',
  'alan',
  'barbara',
  'claude',
  'dennis',
  'edsger',
  'frances',
  'grace',
  'guido',
  'hedy',
  'ivan',
  'john',
  'ken',
  'leslie',
  'linus',
  'margaret',
  'niklaus',
  'radia',
  'rob',
  'sophie',
];

export const REPO_NAMES = [
  'api-gateway',
  'billing',
  'web-app',
  'mobile',
  'infra',
  'docs',
  'search',
  'auth-service',
  'data-pipeline',
  'design-system',
  'cli',
  'sdk-js',
  'sdk-go',
  'notifications',
  'analytics',
];

export const LANGUAGES = ['TypeScript', 'Go', 'Python', 'Rust', 'Java', 'Ruby'];

/** GitHub's default labels for a new repository (name, colour, description). */
export const DEFAULT_LABELS: readonly (readonly [string, string, string])[] = [
  ['bug', 'd73a4a', "Something isn't working"],
  ['documentation', '0075ca', 'Improvements or additions to documentation'],
  ['duplicate', 'cfd3d7', 'This issue or pull request already exists'],
  ['enhancement', 'a2eeef', 'New feature or request'],
  ['good first issue', '7057ff', 'Good for newcomers'],
  ['help wanted', '008672', 'Extra attention is needed'],
  ['invalid', 'e4e669', "This doesn't seem right"],
  ['question', 'd876e3', 'Further information is requested'],
  ['wontfix', 'ffffff', 'This will not be worked on'],
];

export const CUSTOM_LABELS: readonly (readonly [string, string])[] = [
  ['priority: high', 'b60205'],
  ['priority: low', 'c2e0c6'],
  ['area: ui', '1d76db'],
];

/** The workflow label a team puts on an issue when work on it starts (name, colour). */
export const IN_PROGRESS_LABEL: readonly [string, string] = ['in progress', 'fbca04'];

export const VERBS = ['Fix', 'Add', 'Remove', 'Refactor', 'Document', 'Speed up', 'Handle', 'Support', 'Test'];
export const OBJECTS = [
  'pagination of results',
  'login redirect',
  'retry on timeout',
  'dark mode',
  'CSV export',
  'rate limiting',
  'cache invalidation',
  'error messages',
  'the settings page',
  'webhook delivery',
  'time zone handling',
  'search ranking',
  'memory leak in worker',
  'flaky integration test',
  'dependency updates',
];

export const COMMENT_BODIES = [
  'I can reproduce this on the latest release.',
  'Thanks for the report! Looking into it.',
  'Could you share the logs?',
  'This should be fixed by the linked pull request.',
  'LGTM 👍',
  'Any update on this?',
  'Closing as this is no longer relevant.',
  'Here is a minimal reproduction: `npm test -- --grep retry`',
];

export const FILE_PATHS = [
  'src/index.ts',
  'src/server.ts',
  'src/client.ts',
  'README.md',
  'package.json',
  'src/util/retry.ts',
  'test/client.test.ts',
  'docs/usage.md',
  'src/config.ts',
  '.github/workflows/ci.yml',
];
