/** What a sync of the emulator's organisation reads and writes: the demo's datasets and tables. */

/** Every GitHub dataset: what `syncrelay demo --provider github` and the chaos runs read. */
export const DEMO_GITHUB_DATASETS = [
  'repositories',
  'members',
  'work-items',
  'work-item-comments',
  'work-item-history',
  'pull-requests',
  'pull-request-reviews',
  'commits',
];

/** The normalized tables a GitHub sync writes, in the order the summary lists them. */
export const GITHUB_TABLES = [
  'repositories',
  'members',
  'work_items',
  'work_item_comments',
  'work_item_events',
  'pull_requests',
  'pull_request_reviews',
  'commits',
] as const;
