/**
 * What the GitHub provider's tests share: the emulator suite over a GitHub emulator (units read
 * its first repository with its full-access token, the normalized sink running GitHub's hooks),
 * and readers of the emulator's records and request log.
 */
import {
  startGithubEmulator,
  type EmulatorScale,
  type GithubEmulator,
  type GithubEmulatorOptions,
  type ItemRecord,
  type RepoRecord,
  type RequestLogEntry,
} from '../../../src/emulators/github/index.js';
import { GITHUB_SURFACE_HOOKS } from '../../../src/providers/github/starts.js';
import { useEmulatorSuite } from '../../helpers/emulatorSuite.js';
import type { UnitSpec, UnitTarget } from '../../helpers/unitContext.js';

/** One repository of issues only (a test asks for pull requests, commits or more when it reads them). */
export const ISSUES_ONLY: EmulatorScale = {
  repos: 1,
  issues: 150,
  pulls: 0,
  maxComments: 2,
  maxReviews: 2,
  directCommits: 10,
  members: 4,
  days: 5,
};

/** A GitHub unit reads the first repository with the emulator's full-access token; the sink runs GitHub's hooks. */
const target = (emu: GithubEmulator): UnitTarget => ({
  provider: 'github',
  config: { baseUrl: emu.url },
  token: emu.token,
  sourceKey: repoKey(emu),
  hooks: [GITHUB_SURFACE_HOOKS],
});

/** The suite over a GitHub emulator started with `defaults`; its units with `unit` (a window, datasets) on top. */
export function useGithubSuite(defaults: GithubEmulatorOptions, unit: Partial<UnitSpec> = {}) {
  return useEmulatorSuite({ start: startGithubEmulator, defaults, target, unit });
}

/** `owner/repo` of the emulator's repository (its first by default), as sources name it. */
export function repoKey(emu: GithubEmulator, repo: RepoRecord = emu.data.repos[0]!): string {
  return `${emu.data.org.login}/${repo.name}`;
}

/** The first repository's issues and pull requests whose `updated_at` lies in `[since, before)`. */
export function updatedIn(emu: GithubEmulator, since: number, before: number): ItemRecord[] {
  return emu.data.repos[0]!.items.filter((i) => i.updatedAt >= since && i.updatedAt < before);
}

function pathOf(l: RequestLogEntry): string {
  return l.path.split('?')[0]!;
}

/**
 * Requests whose path (query left out) ends with `tail`: `/issues` for the issues list's pages
 * (the first asked for by owner and name, the next through the `Link` header's
 * `/repositories/{id}/…`), `/pulls/\d+` for pull request details.
 */
export function requestsTo(emu: GithubEmulator, tail: RegExp): RequestLogEntry[] {
  const end = new RegExp(`${tail.source}$`);
  return emu.log.filter((l) => end.test(pathOf(l)));
}
