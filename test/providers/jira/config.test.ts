/** Jira config, sources and credentials validated; ADF bodies as plain text; the provider's datasets. */
import { describe, expect, it } from 'vitest';
import { NonRetryableError, ValidationError } from '../../../src/errors.js';
import {
  adfToText,
  authorizationFor,
  createJiraProvider,
  JIRA_DATASETS,
  parseJiraConfig,
  validateSource,
} from '../../../src/providers/jira/index.js';

function fieldOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ValidationError);
    return (err as ValidationError).message;
  }
  throw new Error('expected a ValidationError');
}

describe('Jira config', () => {
  it('takes an https site root; plain http only on 127.0.0.1 or localhost', () => {
    expect(parseJiraConfig({ siteUrl: 'https://acme.atlassian.net/' })).toEqual({
      siteUrl: 'https://acme.atlassian.net',
      budgetShare: 1,
      sprintField: 'customfield_10020',
      auth: 'token',
      oauthTokenUrl: 'https://auth.atlassian.com/oauth/token',
      apiGatewayUrl: 'https://api.atlassian.com',
    });
    expect(parseJiraConfig({ siteUrl: 'http://127.0.0.1:8080', budgetShare: 0.5 }).siteUrl).toBe(
      'http://127.0.0.1:8080',
    );
    expect(parseJiraConfig({ siteUrl: 'http://localhost:9' }).siteUrl).toBe('http://localhost:9');
    for (const siteUrl of [
      'http://acme.atlassian.net',
      'ftp://acme.atlassian.net',
      'https://user:pw@acme.atlassian.net',
      'https://acme.atlassian.net/jira',
      'https://acme.atlassian.net?x=1',
      'not a url',
      '',
      42,
    ]) {
      expect(fieldOf(() => parseJiraConfig({ siteUrl }))).toContain('config.siteUrl');
    }
    expect(fieldOf(() => parseJiraConfig({}))).toContain('config.siteUrl');
    expect(fieldOf(() => parseJiraConfig({ siteUrl: 'https://a.atlassian.net', budgetShare: 2 }))).toContain(
      'config.budgetShare',
    );
    expect(fieldOf(() => parseJiraConfig({ siteUrl: 'https://a.atlassian.net', sprintField: 'x' }))).toContain(
      'config.sprintField',
    );
    expect(fieldOf(() => parseJiraConfig({ siteUrl: 'https://a.atlassian.net', token: 'x' }))).toContain(
      'config.token',
    );
  });

  it('auth: oauth with emulator-only endpoints on loopback; refused with Data Center or off loopback', () => {
    const site = { siteUrl: 'https://acme.atlassian.net' };
    expect(parseJiraConfig({ ...site, auth: 'oauth' })).toMatchObject({ auth: 'oauth' });
    const local = { oauthTokenUrl: 'http://127.0.0.1:4000/oauth/token', apiGatewayUrl: 'http://localhost:4000/' };
    expect(parseJiraConfig({ ...site, auth: 'oauth', ...local })).toMatchObject({
      oauthTokenUrl: 'http://127.0.0.1:4000/oauth/token',
      apiGatewayUrl: 'http://localhost:4000',
    });
    const refused = (config: Record<string, unknown>, field: string) =>
      expect(fieldOf(() => parseJiraConfig(config))).toMatch(new RegExp(`^${field}: `));
    refused({ ...site, auth: 'sso' }, 'config.auth');
    refused({ ...site, auth: 'oauth', oauthTokenUrl: 'https://auth.example.com/oauth/token' }, 'config.oauthTokenUrl');
    refused({ ...site, auth: 'oauth', apiGatewayUrl: 'http://10.0.0.8/' }, 'config.apiGatewayUrl');
    refused({ ...site, apiGatewayUrl: 'http://127.0.0.1:4000' }, 'config.apiGatewayUrl');
    refused({ siteUrl: 'https://jira.example.com', deployment: 'datacenter', auth: 'oauth' }, 'config.auth');
  });

  it('sources are project keys that can go into JQL', () => {
    for (const ok of ['ENG', 'AB', 'A1_B2', 'X'.repeat(20)])
      expect(() => validateSource(ok, 'sources.0')).not.toThrow();
    for (const bad of ['E', 'eng', '1ENG', 'EN G', 'ENG"', 'ENG) OR (1=1', 'X'.repeat(21), '']) {
      expect(fieldOf(() => validateSource(bad, 'sources.3'))).toContain('sources.3');
    }
  });

  it('email:api_token is basic auth; a bare token is a bearer; neither appears in errors', () => {
    expect(authorizationFor('me@acme.io:ATATT123', 's')).toBe(
      `Basic ${Buffer.from('me@acme.io:ATATT123').toString('base64')}`,
    );
    expect(authorizationFor('  pat-token-xyz \n', 's')).toBe('Bearer pat-token-xyz');
    const err = (() => {
      try {
        authorizationFor('a\nsecret-part', 'jira integration "x"');
      } catch (e) {
        return e as NonRetryableError;
      }
      return null;
    })();
    expect(err).toBeInstanceOf(NonRetryableError);
    expect(err!.category).toBe('auth');
    expect(err!.message).not.toContain('secret-part');
  });

  it('declares the datasets: family members fetched with work-items, boards with sprints', () => {
    const by = new Map(JIRA_DATASETS.map((d) => [d.key, d]));
    expect([...by.keys()]).toEqual([
      'projects',
      'members',
      'sprints',
      'boards',
      'work-items',
      'work-item-comments',
      'work-item-history',
      'work-item-labels',
    ]);
    expect(by.get('work-item-comments')!.fetchedWith).toBe('work-items');
    expect(by.get('work-item-history')!.fetchedWith).toBe('work-items');
    expect(by.get('boards')!.fetchedWith).toBe('sprints');
    expect(by.get('work-items')!.surfaces).toEqual(['work_items', 'work_item_comments', 'work_item_events']);
    const p = createJiraProvider();
    expect(p.name).toBe('jira');
    expect(() => p.validateSource!('eng', 'sources.0')).toThrow(ValidationError);
  });
});

describe('ADF → plain text', () => {
  it('keeps the text, line breaks between blocks, mentions, emoji and links', () => {
    const doc = {
      type: 'doc',
      version: 1,
      content: [
        {
          type: 'paragraph',
          content: [
            { type: 'text', text: 'Hi ' },
            { type: 'mention', attrs: { id: 'abc', text: '@Ada' } },
            { type: 'text', text: ' ' },
            { type: 'emoji', attrs: { shortName: ':smile:', text: '😄' } },
            { type: 'hardBreak' },
            { type: 'inlineCard', attrs: { url: 'https://x.test/1' } },
          ],
        },
        {
          type: 'bulletList',
          content: [{ type: 'listItem', content: [{ type: 'paragraph', content: [{ type: 'text', text: 'one' }] }] }],
        },
        { type: 'codeBlock', content: [{ type: 'text', text: 'x = 1' }] },
      ],
    };
    expect(adfToText(doc)).toBe('Hi @Ada 😄\nhttps://x.test/1\none\nx = 1');
    expect(adfToText('plain')).toBe('plain');
    expect(adfToText(null)).toBeNull();
  });
});
