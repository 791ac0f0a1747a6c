/**
 * The request paths of a Jira deployment: Jira Cloud's REST API v3, or Jira Data Center / Server's
 * REST API v2 (https://docs.atlassian.com/software/jira/docs/api/REST/9.12.0/), both with the Jira
 * Software Agile API 1.0 (https://docs.atlassian.com/jira-software/REST/9.12.0/) beside them.
 *
 * A Data Center site may live under a context path (`https://jira.example.com/jira`: "With context:
 * http://host:port/context/rest/api-name/api-version/resource-name",
 * https://developer.atlassian.com/server/jira/platform/rest-apis/). Requests must land under it:
 * the paths here carry it unless the client already keeps the site URL's path when it joins a path
 * to it (`contextPrefix`), so the two never add it twice.
 *
 * Endpoints that differ on Data Center: search is `GET /rest/api/2/search` paged by `startAt` (no
 * `nextPageToken`), and an issue's whole changelog comes with `GET /rest/api/2/issue/{id}
 * ?expand=changelog`: the paged `/issue/{id}/changelog` is Cloud's only (the Data Center reference
 * lists no such resource), so `changelog` is null there.
 */
import { urlOf } from './client.js';
import { deploymentOf, type JiraConfig, type JiraDeployment } from './config.js';

export interface JiraApi {
  deployment: JiraDeployment;
  myself: string;
  status: string;
  /** Cloud: `POST …/search/jql` (token pages); Data Center: `GET …/search` (`startAt` pages). */
  search: string;
  assignableUsers: string;
  project: (key: string) => string;
  issue: (idOrKey: string) => string;
  comments: (issueId: string) => string;
  /** The paged changelog (Cloud); null on Data Center, where `issue(id)?expand=changelog` gives it whole. */
  changelog: (issueId: string) => string | null;
  /** An Agile API path (`board`, `board/{id}/sprint`). */
  agile: (path: string) => string;
}

/** The paths of the integration's deployment, under its site URL. */
export function jiraApi(config: Pick<JiraConfig, 'siteUrl' | 'deployment'>): JiraApi {
  const deployment = deploymentOf(config);
  const root = deployment === 'datacenter' ? `${contextPrefix(config.siteUrl)}/rest/api/2` : '/rest/api/3';
  const agileRoot = `${deployment === 'datacenter' ? contextPrefix(config.siteUrl) : ''}/rest/agile/1.0`;
  const id = (s: string) => encodeURIComponent(s);
  return {
    deployment,
    myself: `${root}/myself`,
    status: `${root}/status`,
    search: deployment === 'datacenter' ? `${root}/search` : `${root}/search/jql`,
    assignableUsers: `${root}/user/assignable/search`,
    project: (key) => `${root}/project/${id(key)}`,
    issue: (idOrKey) => `${root}/issue/${id(idOrKey)}`,
    comments: (issueId) => `${root}/issue/${id(issueId)}/comment`,
    changelog: (issueId) => (deployment === 'datacenter' ? null : `${root}/issue/${id(issueId)}/changelog`),
    agile: (path) => `${agileRoot}/${path}`,
  };
}

/**
 * The site URL's path (`/jira`), when requests must carry it: the client resolves a path against
 * the site URL, and an absolute path set below a URL with a path of its own replaces that path.
 * When the client keeps the site's path itself, nothing is added.
 */
export function contextPrefix(siteUrl: string): string {
  const path = new URL(siteUrl).pathname.replace(/\/+$/, '');
  if (path === '') return '';
  return new URL(urlOf(siteUrl, '/rest')).pathname === `${path}/rest` ? '' : path;
}
