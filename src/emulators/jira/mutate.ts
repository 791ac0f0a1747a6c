/**
 * Data changing between runs: at the clock's now, some issues move along their workflow (a status
 * change, resolved when done), some get a comment, some an assignee change, and new issues appear.
 * Each change is announced (the webhook it sends: webhooks.ts).
 */
import { Rng } from '../core/random.js';
import type { Announce } from '../core/webhooks.js';
import { issueUpdated, type JiraChange } from './webhooks.js';
import { addComment, addIssue, resolutionItem, transition } from './generate.js';
import { compareIssues, type IssueRec, type SiteData } from './model.js';
import type { JiraScale } from './options.js';

export interface MutationSummary {
  /** Keys of the issues changed (status, comment or assignee) or created, each once. */
  touched: string[];
  created: string[];
  transitioned: string[];
  commented: string[];
}

const NEXT: Readonly<Record<string, string>> = { '10000': '3', '3': '10001', '10001': '10002' };

export function mutateSite(
  data: SiteData,
  scale: JiraScale,
  round: number,
  now: number,
  announce: Announce<JiraChange> = () => undefined,
): MutationSummary {
  const rng = new Rng(round, 'mutate');
  const all = data.projects.flatMap((p) => p.issues);
  const n = Math.max(1, Math.ceil(all.length / 50));
  const summary: MutationSummary = { touched: [], created: [], transitioned: [], commented: [] };
  const author = () => rng.pick(data.users).accountId;
  for (let k = 0; k < n && all.length > 0; k++) {
    const issue = rng.pick(all);
    const to = NEXT[issue.statusId];
    if (to && rng.chance(0.6)) {
      transition(data, issue, to, now, author());
      if (to === '10002') resolve(issue, now);
      summary.transitioned.push(issue.key);
      announce(issueUpdated(issue, issue.histories.at(-1)!));
    } else {
      addComment(data, issue, now, author(), `update ${round}.${k}`);
      summary.commented.push(issue.key);
      announce({ event: 'comment_created', issue, comment: issue.comments.at(-1)!, at: now });
    }
  }
  for (let k = 0; k < Math.max(1, Math.ceil(n / 4)); k++) {
    const project = data.projects[k % data.projects.length]!;
    const created = addIssue(data, project, new Rng(round, `new:${k}`), { ...scale, days: 0 }, now);
    created.updated = now;
    summary.created.push(created.key);
    announce({ event: 'jira:issue_created', issue: created, user: created.reporter, at: now });
  }
  for (const p of data.projects) p.issues.sort(compareIssues);
  summary.touched = [...new Set([...summary.transitioned, ...summary.commented, ...summary.created])];
  return summary;
}

function resolve(issue: IssueRec, now: number): void {
  issue.resolution = 'Done';
  issue.resolutiondate = now;
  issue.histories.at(-1)!.items.push(resolutionItem('Done'));
}
