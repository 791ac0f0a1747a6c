/**
 * The GitHub App's endpoints (authentication in appAuth.ts). With an App JWT, as GitHub's REST
 * documentation lists them: "Get the authenticated app" (`GET /app`), "List installations for the
 * authenticated app" (`GET /app/installations`), "Get an installation for the authenticated app"
 * (`GET /app/installations/{id}`), "Create an installation access token for an app"
 * (`POST /app/installations/{id}/access_tokens`, 201), "Get an organization installation for the
 * authenticated app" (`GET /orgs/{org}/installation`), "Get a user installation for the
 * authenticated app" (`GET /users/{username}/installation`: GitHub's users endpoints answer an
 * organisation's login too; the installation's account is the organisation) and "Get a repository
 * installation for the authenticated app" (`GET /repos/{owner}/{repo}/installation`); an unknown
 * installation, account or repository (or one the installation was not given) is a 404. With an
 * installation access token: "List repositories accessible to the app installation" (`GET
 * /installation/repositories`, paged by `per_page` and `page` with a Link header like every list
 * here), `{total_count, repository_selection, repositories}` with the repositories the installation
 * was given (appAuth.ts) in the `repository` shape.
 */
import type { components } from '@octokit/openapi-types';
import type { GithubApp } from './appAuth.js';
import { DAY_MS, isoSeconds, type RepoRecord } from './model.js';
import { paginate } from './query.js';
import { renderRepository, renderUser, type RenderContext } from './renderRepo.js';
import { errorAnswer, notFound, type Answer } from './responses.js';
import { canonicalPath } from './router.js';

type Schemas = components['schemas'];

const APPS_DOCS = 'https://docs.github.com/rest/apps/apps';
const INSTALLATIONS_DOCS = 'https://docs.github.com/rest/apps/installations';

/** Who sent a request: a configured token, the App (a JWT) or its installation (an access token). */
export type CallerKind = 'token' | 'app' | 'installation';

/** The permissions the installation holds: reading what the emulator serves. */
const PERMISSIONS: Schemas['app-permissions'] = {
  contents: 'read',
  issues: 'read',
  members: 'read',
  metadata: 'read',
  pull_requests: 'read',
};

interface AppRequest {
  app: GithubApp;
  render: RenderContext;
  url: URL;
  params: string[];
  /** The endpoint's documentation_url, for its errors. */
  docs: string;
}

interface AppRoute {
  method: 'GET' | 'POST';
  path: RegExp;
  docs: string;
  handler: (r: AppRequest) => Answer;
}

const APP_ROUTES: AppRoute[] = [
  { method: 'GET', path: /^\/app$/, docs: `${APPS_DOCS}#get-the-authenticated-app`, handler: getApp },
  {
    method: 'GET',
    path: /^\/app\/installations$/,
    docs: `${APPS_DOCS}#list-installations-for-the-authenticated-app`,
    handler: listInstallations,
  },
  {
    method: 'GET',
    path: /^\/app\/installations\/([^/]+)$/,
    docs: `${APPS_DOCS}#get-an-installation-for-the-authenticated-app`,
    handler: (r) => (installationMatches(r) ? ok(renderInstallation(r)) : notFound(r.docs)),
  },
  {
    method: 'POST',
    path: /^\/app\/installations\/([^/]+)\/access_tokens$/,
    docs: `${APPS_DOCS}#create-an-installation-access-token-for-an-app`,
    handler: createAccessToken,
  },
  {
    method: 'GET',
    path: /^\/orgs\/([^/]+)\/installation$/,
    docs: `${APPS_DOCS}#get-an-organization-installation-for-the-authenticated-app`,
    handler: (r) => (sameLogin(r.params[0], r.render.data.org.login) ? ok(renderInstallation(r)) : notFound(r.docs)),
  },
  {
    method: 'GET',
    path: /^\/users\/([^/]+)\/installation$/,
    docs: `${APPS_DOCS}#get-a-user-installation-for-the-authenticated-app`,
    handler: (r) => (sameLogin(r.params[0], r.render.data.org.login) ? ok(renderInstallation(r)) : notFound(r.docs)),
  },
  {
    method: 'GET',
    path: /^\/repos\/([^/]+)\/([^/]+)\/installation$/,
    docs: `${APPS_DOCS}#get-a-repository-installation-for-the-authenticated-app`,
    handler: (r) => (repoOf(r) ? ok(renderInstallation(r)) : notFound(r.docs)),
  },
];

const REPOSITORIES_PATH = '/installation/repositories';
const REPOSITORIES_DOCS = `${INSTALLATIONS_DOCS}#list-repositories-accessible-to-the-app-installation`;

/** The App route `pathname` names (any method), when it is one: only these take a JWT. */
function appRouteOf(render: RenderContext, pathname: string) {
  const path = canonicalPath(render.data, pathname);
  if (path === null) return null;
  for (const route of APP_ROUTES) {
    const m = route.path.exec(path);
    if (m) return { route, params: m.slice(1).map(safeDecode) };
  }
  return null;
}

/** Whether `pathname` is one of the endpoints that take an App JWT (and no other credential). */
export function isAppJwtPath(render: RenderContext, pathname: string): boolean {
  return appRouteOf(render, pathname) !== null;
}

/**
 * The answer of an App endpoint for `caller`, or null when the request is not one (the normal
 * routes answer it). A JWT caller only ever reaches App routes (server.ts refuses it elsewhere).
 */
export function appAnswer(
  app: GithubApp,
  caller: CallerKind,
  input: { render: RenderContext; method: string; url: URL },
): Answer | null {
  const { render, url } = input;
  const method = input.method === 'HEAD' ? 'GET' : input.method;
  if (caller === 'app') {
    const found = appRouteOf(render, url.pathname);
    if (!found || found.route.method !== method) return notFound(found?.route.docs);
    return found.route.handler({ app, render, url, params: found.params, docs: found.route.docs });
  }
  if (caller !== 'installation') return null;
  const path = canonicalPath(render.data, url.pathname);
  if (path === REPOSITORIES_PATH) {
    if (method !== 'GET') return notFound(REPOSITORIES_DOCS);
    return listRepositories({ app, render, url, params: [], docs: REPOSITORIES_DOCS });
  }
  if (path === '/user') {
    return errorAnswer(
      403,
      'Resource not accessible by integration',
      'https://docs.github.com/rest/users/users#get-the-authenticated-user',
    );
  }
  return null;
}

function ok(body: unknown, status = 200): Answer {
  return { status, body };
}

function safeDecode(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return '';
  }
}

function sameLogin(a: string | undefined, b: string): boolean {
  return (a ?? '').toLowerCase() === b.toLowerCase();
}

function installationMatches(r: AppRequest): boolean {
  return /^\d+$/.test(r.params[0] ?? '') && Number(r.params[0]) === r.app.installationId;
}

function repoOf(r: AppRequest): RepoRecord | null {
  const data = r.render.data;
  if (!sameLogin(r.params[0], data.org.login)) return null;
  const repo = data.repos.find((rec) => sameLogin(r.params[1], rec.name)) ?? null;
  return repo && r.app.reaches(repo.name) ? repo : null;
}

/** When the App was registered and installed: before the organisation's history starts. */
function appTimes(r: AppRequest): { created: string; updated: string } {
  const start = r.render.data.start;
  return { created: isoSeconds(start - 30 * DAY_MS), updated: isoSeconds(start - DAY_MS) };
}

function getApp(r: AppRequest): Answer {
  const { app, render } = r;
  const times = appTimes(r);
  const body: NonNullable<Schemas['integration']> = {
    id: app.appId,
    slug: app.slug,
    node_id: Buffer.from(`04:Integration${app.appId}`).toString('base64'),
    client_id: app.clientId,
    owner: renderUser(render, render.data.org),
    name: 'Emulated App',
    description: 'The GitHub emulator’s App',
    external_url: render.html,
    html_url: `${render.html}/apps/${app.slug}`,
    created_at: times.created,
    updated_at: times.updated,
    permissions: { ...PERMISSIONS },
    events: [],
    installations_count: 1,
  };
  return ok(body);
}

function renderInstallation(r: AppRequest): Schemas['installation'] {
  const { app, render } = r;
  const org = render.data.org;
  const times = appTimes(r);
  return {
    id: app.installationId,
    client_id: app.clientId,
    account: renderUser(render, org),
    repository_selection: app.repositorySelection,
    access_tokens_url: `${render.api}/app/installations/${app.installationId}/access_tokens`,
    repositories_url: `${render.api}${REPOSITORIES_PATH}`,
    html_url: `${render.html}/organizations/${org.login}/settings/installations/${app.installationId}`,
    app_id: app.appId,
    app_slug: app.slug,
    target_id: org.id,
    target_type: 'Organization',
    permissions: { ...PERMISSIONS },
    events: [],
    created_at: times.updated,
    updated_at: times.updated,
    single_file_name: null,
    has_multiple_single_files: false,
    single_file_paths: [],
    suspended_by: null,
    suspended_at: null,
  };
}

function listInstallations(r: AppRequest): Answer {
  const page = paginate([r.app.installationId], r.url.searchParams, `${r.render.api}/app/installations`);
  return {
    status: 200,
    body: page.items.map(() => renderInstallation(r)),
    headers: page.link ? { link: page.link } : {},
  };
}

/** The request body (narrowing to some repositories or permissions) is not read: see appAuth.ts. */
function createAccessToken(r: AppRequest): Answer {
  if (!installationMatches(r)) return notFound(r.docs);
  const { token, expiresAt } = r.app.issueToken();
  const body: Schemas['installation-token'] = {
    token,
    expires_at: isoSeconds(expiresAt),
    permissions: { ...PERMISSIONS },
    repository_selection: r.app.repositorySelection,
  };
  return ok(body, 201);
}

function listRepositories(r: AppRequest): Answer {
  const all = r.render.data.repos.filter((repo) => r.app.reaches(repo.name));
  const page = paginate(all, r.url.searchParams, `${r.render.api}${REPOSITORIES_PATH}`);
  return {
    status: 200,
    body: {
      total_count: all.length,
      repository_selection: r.app.repositorySelection,
      repositories: page.items.map((repo) => renderRepository(r.render, repo)),
    },
    headers: page.link ? { link: page.link } : {},
  };
}
