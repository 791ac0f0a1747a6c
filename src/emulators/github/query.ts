/** Query parameters as GitHub reads them: page / per_page, enumerations, ISO 8601 times. */
import { validationFailed, type Answer } from './responses.js';

/** Thrown by a handler to answer at once (an invalid parameter, an unknown commit). */
export class AnswerError extends Error {
  constructor(readonly answer: Answer) {
    super(`answer ${answer.status}`);
  }
}

export const PER_PAGE_DEFAULT = 30;
export const PER_PAGE_MAX = 100;

/** per_page (default 30, at most 100; anything not a positive integer means the default) and page (≥ 1). */
export function pageParams(q: URLSearchParams): { perPage: number; page: number } {
  const perRaw = Number.parseInt(q.get('per_page') ?? '', 10);
  const pageRaw = Number.parseInt(q.get('page') ?? '', 10);
  return {
    perPage: Number.isFinite(perRaw) && perRaw > 0 ? Math.min(perRaw, PER_PAGE_MAX) : PER_PAGE_DEFAULT,
    page: Number.isFinite(pageRaw) && pageRaw > 0 ? pageRaw : 1,
  };
}

export interface ParamContext {
  q: URLSearchParams;
  resource: string;
  docs: string;
}

/** One of `allowed`, `fallback` when absent; anything else is a 422 naming the field. */
export function enumParam<T extends string>(ctx: ParamContext, name: string, allowed: readonly T[], fallback: T): T {
  const raw = ctx.q.get(name);
  if (raw === null || raw === '') return fallback;
  if ((allowed as readonly string[]).includes(raw)) return raw as T;
  throw new AnswerError(validationFailed(ctx.resource, name, raw, ctx.docs));
}

const ISO = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

/** An ISO 8601 time in epoch ms, null when absent; a malformed one is a 422. */
export function timeParam(ctx: ParamContext, name: string): number | null {
  const raw = ctx.q.get(name);
  if (raw === null || raw === '') return null;
  const ms = ISO.test(raw) ? Date.parse(/T/.test(raw) && !/(Z|[+-]\d{2}:?\d{2})$/.test(raw) ? `${raw}Z` : raw) : NaN;
  if (Number.isNaN(ms)) throw new AnswerError(validationFailed(ctx.resource, name, raw, ctx.docs));
  return ms;
}

export interface Page<T> {
  items: T[];
  link: string | null;
}

/**
 * One page of `all` and GitHub's Link header: `prev`, `next`, `last`, `first` in that order, each
 * the request's own query with `page` replaced (first page: next and last; last page: prev and
 * first; no header when everything fits on one page).
 */
export function paginate<T>(all: readonly T[], q: URLSearchParams, linkBase: string): Page<T> {
  const { perPage, page } = pageParams(q);
  const items = all.slice((page - 1) * perPage, page * perPage);
  const last = Math.max(1, Math.ceil(all.length / perPage));
  if (last === 1 && page === 1) return { items, link: null };
  const href = (p: number): string => {
    const params = new URLSearchParams(q);
    params.set('page', String(p));
    return `<${linkBase}?${params.toString()}>`;
  };
  const rels: string[] = [];
  if (page > 1) rels.push(`${href(Math.min(page - 1, last))}; rel="prev"`);
  if (page < last) rels.push(`${href(page + 1)}; rel="next"`, `${href(last)}; rel="last"`);
  if (page > 1) rels.push(`${href(1)}; rel="first"`);
  return { items, link: rels.join(', ') };
}
