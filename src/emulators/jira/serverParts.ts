/**
 * What the emulator's front (server.ts, and serverDc.ts for the Data Center flavor) is made of, and
 * the request helpers both use.
 */
import type { IncomingMessage } from 'node:http';
import type { Clock } from '../../clock.js';
import type { FaultDeck } from '../core/faultDeck.js';
import { readBody } from '../core/http.js';
import type { FaultKind, FaultSpec } from './faults.js';
import type { EndpointLimiter, RateLimiter } from './limits.js';
import type { UserRec } from './model.js';
import type { OAuthGrant } from './oauth.js';
import type { Site } from './render.js';
import type { SearchIndex } from './searchIndex.js';

/** How a request signed in. */
export type Auth = 'basic' | 'bearer' | 'oauth';

export interface RequestLogEntry {
  seq: number;
  /** The clock's time, ISO 8601. */
  at: string;
  method: string;
  /** Path and query. */
  path: string;
  /** The JQL of a search (GET or POST). */
  jql: string | null;
  /** `basic` or `bearer` for the site's credential, `oauth` for an access token on the gateway; null: refused. */
  auth: Auth | null;
  status: number;
  fault: FaultKind | null;
  remaining: number | null;
  /** performance.now() when the request arrived and when it was answered. */
  startedAt: number;
  endedAt: number;
}

export interface ServerParts {
  clock: Clock;
  site: Site;
  email: string;
  apiToken: string;
  viewer: UserRec;
  limiter: RateLimiter;
  endpoints: EndpointLimiter;
  index: SearchIndex;
  faults: FaultDeck<FaultSpec>;
  /** Makes the edits due by the clock (churn.ts) before a request is served. */
  churn?: (now: number) => void;
  sprintField: string;
  /** Comments a `comment/list` page holds at most (null: everything asked). */
  commentListPage: number | null;
  /** The OAuth 2.0 grant (oauth.ts): the token endpoint, accessible-resources and the gateway. */
  oauth: OAuthGrant | null;
  log: RequestLogEntry[];
  logLimit: number;
  /** `datacenter`: Jira Data Center's REST v2 instead (serverDc.ts). @default cloud */
  flavor?: 'cloud' | 'datacenter';
}

/** A POST's JSON body: the object, null for other methods, `bad` when it does not parse. */
export async function jsonBody(req: IncomingMessage): Promise<Record<string, unknown> | null | 'bad'> {
  if (req.method !== 'POST') return null;
  try {
    return JSON.parse((await readBody(req)) ?? '') as Record<string, unknown>;
  } catch {
    return 'bad';
  }
}

/** Jira's `X-AREQUESTID`: unique per request of this emulator. */
export function requestId(seq: number): string {
  return `${(seq * 2654435761) % 4294967296}`.padStart(10, '0').replace(/^(\d{3})(\d{3})/, '$1x$2x');
}
