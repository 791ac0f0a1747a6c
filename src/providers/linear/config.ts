/**
 * A Linear integration's config and sources, validated once.
 *
 * | key           | rule                                                                          |
 * |---------------|-------------------------------------------------------------------------------|
 * | `apiUrl`      | the GraphQL endpoint: an https URL without credentials, query or fragment,    |
 * |               | ≤ 2048 characters, its host as the outbound policy allows (kit/outbound.ts;   |
 * |               | plain http only to loopback, e.g. the emulator);                              |
 * |               | @default https://api.linear.app/graphql                                       |
 * | `budgetShare` | a number, 0 < x ≤ 1: the share of the credential's rate-limit budget this     |
 * |               | integration may use (the rest is kept for others); @default 1                 |
 *
 * A source is a team key (`ENG`): an upper-case letter, then up to 9 upper-case letters or digits.
 */
import { budgetShare, checkUrl, keySources, parseSettings } from '../kit/config.js';
import type { OutboundPolicy } from '../kit/outbound.js';

export interface LinearConfig {
  apiUrl: string;
  budgetShare: number;
}

export const LINEAR_DEFAULT_API_URL = 'https://api.linear.app/graphql';

/**
 * Reads `config` (its URL under `outbound`, @default the process's policy), throwing
 * `ValidationError` naming `config.<key>` for the first problem.
 */
export function parseLinearConfig(config: unknown, outbound?: OutboundPolicy): LinearConfig {
  return parseSettings<LinearConfig>(config, 'Linear', { apiUrl: (raw) => apiUrl(raw, outbound), budgetShare });
}

/** The GraphQL endpoint, as given (its path included). */
function apiUrl(raw: unknown, outbound: OutboundPolicy | undefined): string {
  if (raw === undefined) return LINEAR_DEFAULT_API_URL;
  return checkUrl(raw, 'config.apiUrl', { path: true }, outbound).text;
}

/** A Linear team key. */
export const TEAM_KEY = /^[A-Z][A-Z0-9]{0,9}$/;

const TEAMS = keySources('a Linear team key', TEAM_KEY, 'A–Z then up to 9 of A–Z, 0–9');

/** Throws `ValidationError` naming `field` unless `source` is a team key. */
export const validateSource = TEAMS.validate;

/** A unit's source as a team key; one that is not a team key cannot be found. */
export const teamKeyOf = TEAMS.of;
